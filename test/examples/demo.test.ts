import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/gateway.ts';

const demo = fileURLToPath(new URL('../../examples/demo.ts', import.meta.url));
const ajv = new Ajv({ strict: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);
const validateManifest = ajv.compile(JSON.parse(readFileSync(new URL('../../schemas/manifest.json', import.meta.url), 'utf8')));

/** Every string value in a JSON document. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

describe('npm run demo', () => {
  it('starts both backends and the gateway, advertises only public URLs that answer, and stops on SIGTERM', async () => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', demo], {
      env: { ...process.env, GATEWAY_PORT: '0', ORDERS_PORT: '0', PAYMENTS_PORT: '0' },
    });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (out += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      // A fresh process loads every module first: on a loaded machine that alone can take 20 s.
      const base = (await eventually(() => /proto-gateway demo: (http:\/\/\S+)/.exec(out), 60_000))[1];
      const manifest = await (await fetch(`${base}.well-known/proto`)).json();
      expect(validateManifest(manifest)).toBe(true);
      expect(Object.keys(manifest.PROTO.services)).toEqual(['io.proto.agents', 'com.example.orders', 'com.example.payments']);
      const advertised = new Set(strings(manifest).filter((s) => /^https?:\/\//.test(s)));
      for (const url of advertised) expect(url.startsWith(base), url).toBe(true);
      for (const url of advertised) {
        // Endpoint roots and the MCP server (a JSON-RPC endpoint: a bare GET is not an MCP request) are bases, not documents.
        const isEndpointRoot = Object.values(manifest.PROTO.services).some((s: any) => s.http?.endpoint === url || s.mcp?.server === url);
        if (!isEndpointRoot) expect((await fetch(url)).status, url).toBe(200);
      }
      await eventually(async () => (await (await fetch(`${base}events?type=OrderCreatedV1`)).json()).events.length > 0);
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  }, 120_000);
});
