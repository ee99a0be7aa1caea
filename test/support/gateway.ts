/**
 * Starts a real gateway on 127.0.0.1:0 from YAML text, with a silent logger and the memory store
 * unless the YAML says otherwise. Every test gateway is closed by `closeAll()` (afterEach).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/app.ts';
import { parseConfig } from '../../src/gateway-config.ts';

const open: Array<{ close(): Promise<void> }> = [];

/** A directory of its own for one test's files. */
export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'pgw-test-'));
}

/** YAML of a gateway on port 0 with the memory store, plus `body` (more top-level keys). */
export function gatewayYaml(body = '', storage = 'storage: { driver: memory }'): string {
  return `server: { host: 127.0.0.1, port: 0 }\n${storage}\n${body}`;
}

/** Starts a gateway from YAML; `file` decides where relative paths point; `options` adds gateway options (e.g. a resolver). */
export async function startTestGateway(
  yaml: string,
  env: NodeJS.ProcessEnv = {},
  file = join(tempDir(), 'gateway.yaml'),
  options: GatewayOptions = {},
): Promise<Gateway> {
  const config = await parseConfig(yaml, file, env);
  const gateway = await startGateway(config, { logger: pino({ level: 'silent' }), ...options });
  track(gateway);
  return gateway;
}

/** A gateway started from a file of `yaml`; `rewrite(text)` writes the file anew and reloads it (`gateway.reload`). */
export async function reloadable(yaml: string, options: GatewayOptions = {}) {
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, yaml);
  const gw = await startTestGateway(yaml, {}, file, options);
  return { gw, rewrite: (text: string) => (writeFileSync(file, text), gw.reload('test')) };
}

/** Registers anything with `close()` to be closed by `closeAll()`. */
export function track<T extends { close(): Promise<void> }>(thing: T): T {
  open.push(thing);
  return thing;
}

/** Closes everything started by this test, newest first. */
export async function closeAll(): Promise<void> {
  while (open.length > 0) await open.pop()?.close();
}

/** Fetches JSON: status, headers and parsed body. */
export async function getJson(url: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(url, init);
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body };
}

/** Polls `check` until it returns a truthy value or `timeoutMs` passes. */
export async function eventually<T>(check: () => Promise<T> | T, timeoutMs = 10_000, stepMs = 50): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

/** A loopback port that was free a moment ago (for a backend that is down, then comes up). */
export async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}
