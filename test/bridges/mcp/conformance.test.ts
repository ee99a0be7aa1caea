/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance`, the pinned
 * devDependency), server scenarios, against a gateway in its own process. Each scenario whose
 * feature the gateway declares must pass; README (MCP, Conformance) says why the others do not
 * apply (they call the suite's own fixture tools, resources and prompts, or capabilities the
 * gateway does not declare: prompts, completions, sampling, elicitation).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, freePort, tempDir } from '../../support/gateway.ts';
import { spawnGateway } from '../../support/process.ts';

afterEach(closeAll);

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../../../node_modules/@modelcontextprotocol/conformance/dist/index.js', import.meta.url));

/** The server scenarios whose feature the gateway declares (tools, resources with subscribe, logging, the Streamable HTTP transport). */
export const APPLICABLE_SCENARIOS = [
  'server-initialize',
  'ping',
  'logging-set-level',
  'tools-list',
  'tools-call-error',
  'server-sse-multiple-streams',
  'resources-list',
  'resources-subscribe',
  'resources-unsubscribe',
  'dns-rebinding-protection',
];

describe('MCP conformance suite (server scenarios)', () => {
  it('passes every scenario whose feature the gateway declares', async () => {
    const port = await freePort();
    const file = join(tempDir(), 'gateway.yaml');
    writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }\nstorage: { driver: memory }\n`);
    spawnGateway(file);
    const url = `http://127.0.0.1:${port}/`;
    await eventually(async () => (await fetch(`${url}readyz`).catch(() => undefined))?.status === 200, 60_000, 100);
    const failed: string[] = [];
    for (const scenario of APPLICABLE_SCENARIOS) {
      const outcome = await run(process.execPath, [CLI, 'server', '--url', `${url}mcp`, '--scenario', scenario, '-o', tempDir()], { timeout: 120_000 })
        .then(() => 'passed')
        .catch((err: { stdout?: string }) => `failed:\n${err.stdout ?? String(err)}`);
      if (outcome !== 'passed') failed.push(`${scenario} ${outcome}`);
    }
    expect(failed).toEqual([]);
  }, 600_000);
});
