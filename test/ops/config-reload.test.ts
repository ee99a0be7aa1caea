/**
 * Live reload on a spawned gateway, with real clients: an SSE stream, a gRPC Subscribe and an MCP
 * session (SDK client, its GET stream) open under a key that stays, and the same three under a key
 * the reload rotates. The file is rewritten to add a legacy backend (gamma), change another's
 * mapping (alpha), remove a third (beta) and rotate a key; then SIGHUP, or (second test) nothing
 * but a Kubernetes-style symlink swap with `server.watchConfig: true`. Afterwards: the kept
 * streams are still open and carry gamma's event, gamma's commands work, beta's routes are 404,
 * alpha's commands take the new path, the old key is refused and its three streams are closed, the
 * new key works, `/status` shows the new generation; an invalid file changes nothing.
 */
import { mkdirSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { envelope, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, freePort, tempDir, track } from '../support/gateway.ts';
import { grpcClient, keyMetadata, subscribe } from '../support/grpc.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';
import { sseRecords } from '../support/sse.ts';

afterEach(closeAll);

const KEEP = 'keep-key-0123456789';
const OLD = 'old-key-0123456789';
const NEW = 'new-key-0123456789';

interface Ports {
  http: number;
  grpc: number;
  backend: string;
}

function legacy(id: string, url: string, type: string, path: string, success?: string): string {
  return `  - id: ${id}
    kind: legacy
    url: "${url}/${id}"
    commands:
      - type: ${type}
        version: "1.0"
        jsonSchema: { type: object, required: [n], properties: { n: { type: integer } } }
        request: { method: POST, path: "${path}" }
${success ? `        events: { success: { type: ${success} } }\n` : ''}`;
}

function yaml(ports: Ports, options: { after: boolean; watch?: boolean }): string {
  const key = options.after ? NEW : OLD;
  const backends = options.after
    ? legacy('alpha', ports.backend, 'ShipOrder', '/v2/ship') + legacy('gamma', ports.backend, 'PackOrder', '/pack', 'OrderPackedV1')
    : legacy('alpha', ports.backend, 'ShipOrder', '/v1/ship') + legacy('beta', ports.backend, 'BillOrder', '/bill');
  return `server: { host: 127.0.0.1, port: ${ports.http}${options.watch ? ', watchConfig: true' : ''} }
storage: { driver: memory }
metrics: { public: true }
grpc: { host: 127.0.0.1, port: ${ports.grpc} }
commands: { dispatch: { timeout: 2s, concurrency: 4, retry: { schedule: [50ms, 50ms] } } }
auth:
  type: apiKey
  keys:
    - { id: keeper, key: ${KEEP}, scopes: [read, write] }
    - { id: rotated, key: ${key}, scopes: [read, write] }
backends:
${backends}`;
}

/** A Kubernetes ConfigMap volume: `gateway.yaml -> ..data/gateway.yaml`, `..data -> ..<version>`. */
function configMapDir(text: string): { file: string; swap(text: string): void } {
  const dir = tempDir();
  let version = 0;
  const publish = (content: string) => {
    version += 1;
    const target = `..2026_11_25_${version}`;
    mkdirSync(join(dir, target));
    writeFileSync(join(dir, target, 'gateway.yaml'), content);
    symlinkSync(target, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  publish(text);
  symlinkSync('..data/gateway.yaml', join(dir, 'gateway.yaml'));
  return { file: join(dir, 'gateway.yaml'), swap: publish };
}

async function metric(base: string, name: string, labels = ''): Promise<number> {
  const text = await (await fetch(`${base}metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels} `) || (labels === '' && l.startsWith(`${name} `)));
  return line ? Number(line.split(' ').at(-1)) : 0;
}

async function status(base: string): Promise<any> {
  return (await fetch(`${base}status`, { headers: { 'X-Api-Key': KEEP } })).json();
}

function post(base: string, key: string, body: unknown): Promise<Response> {
  return fetch(`${base}commands`, { method: 'POST', headers: { 'content-type': 'application/json', 'X-Api-Key': key }, body: JSON.stringify(body) });
}

/** An SSE stream of `/events/stream`, its events collected; `ended` resolves when the server ends it. */
async function openSse(base: string, key: string) {
  const res = await fetch(`${base}events/stream`, { headers: { 'X-Api-Key': key, accept: 'text/event-stream' } });
  expect(res.status).toBe(200);
  const types: string[] = [];
  const state = { ended: false };
  void (async () => {
    try {
      for await (const record of sseRecords(res.body as AsyncIterable<Uint8Array>)) if (record.data) types.push(JSON.parse(record.data).type);
    } catch {
      // A cut connection ends the stream too.
    }
    state.ended = true;
  })();
  track({ close: async () => void res.body?.cancel().catch(() => undefined) });
  return { types, state };
}

async function openMcp(base: string, key: string): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${base}mcp`), { requestInit: { headers: { 'X-Api-Key': key } } });
  const client = new Client({ name: 'reload-test', version: '1.0.0' });
  await client.connect(transport);
  track({ close: () => client.close() });
  return client;
}

/** The scenario: open streams, rewrite (via `apply`), check everything, then an invalid file. */
async function scenario(start: (text: string) => { gateway: GatewayProcess; rewrite(text: string): void; trigger(): void }) {
  const backend = await scriptedBackend((_req, res) => sendJson(res, 200, { ok: true }));
  track(backend);
  const ports: Ports = { http: await freePort(), grpc: await freePort(), backend: backend.url };
  const watch = true;
  const { gateway, rewrite, trigger } = start(yaml(ports, { after: false, watch }));
  const base = `http://127.0.0.1:${ports.http}/`;
  await eventually(async () => (await fetch(`${base}readyz`).catch(() => undefined))?.status === 200, 60_000, 200);
  const before = (await status(base)).config;
  expect(before.generation.hash).toMatch(/^[0-9a-f]{16}$/);
  expect(before.lastReload).toBeNull();

  // Three streams under each key.
  const keptSse = await openSse(base, KEEP);
  const oldSse = await openSse(base, OLD);
  const client = grpcClient(ports.grpc);
  const keptGrpc = subscribe(client, {}, keyMetadata(KEEP));
  const oldGrpc = subscribe(client, {}, keyMetadata(OLD));
  let oldGrpcEnded = false;
  oldGrpc.call.on('close', () => (oldGrpcEnded = true));
  const keptMcp = await openMcp(base, KEEP);
  await openMcp(base, OLD);
  await eventually(async () => (await metric(base, 'proto_gateway_quota_slots', '{quota="streams"}')) === 6, 30_000, 100);
  expect((await fetch(`${base}services/beta`, { headers: { 'X-Api-Key': KEEP } })).status).toBe(200);

  rewrite(yaml(ports, { after: true, watch }));
  trigger();
  const applied = await eventually(() => gateway.logs.find((line) => line.component === 'reload' && line.outcome === 'applied'), 30_000, 100);
  expect(applied).toMatchObject({ backendsAdded: ['gamma'], backendsRemoved: ['beta'], backendsChanged: ['alpha'], needsRestart: [] });

  // The old key: refused at once, its three streams closed; the new key works.
  expect((await fetch(`${base}commands`, { headers: { 'X-Api-Key': OLD } })).status).toBe(401);
  expect((await fetch(`${base}commands`, { headers: { 'X-Api-Key': NEW } })).status).toBe(200);
  await eventually(() => oldSse.state.ended, 10_000);
  expect(keptSse.state.ended).toBe(false);
  await eventually(() => oldGrpcEnded, 10_000);
  expect(oldGrpc.error()?.code).toBe(grpc.status.UNAUTHENTICATED);
  await eventually(async () => (await metric(base, 'proto_gateway_quota_slots', '{quota="streams"}')) === 3, 10_000, 100);

  // Backends: gamma added, beta gone, alpha's new mapping.
  expect((await fetch(`${base}services/beta`, { headers: { 'X-Api-Key': KEEP } })).status).toBe(404);
  expect((await fetch(`${base}services/beta/commands`, { headers: { 'X-Api-Key': KEEP } })).status).toBe(404);
  expect((await post(base, KEEP, envelope('BillOrder', 'bill-order/1.0', { n: 1 }))).status).toBe(422);
  expect((await post(base, NEW, envelope('PackOrder', 'pack-order/1.0', { n: 2 }))).status).toBe(201);
  expect((await post(base, KEEP, envelope('ShipOrder', 'ship-order/1.0', { n: 3 }))).status).toBe(201);
  await eventually(() => backend.received.some((r) => r.url === '/gamma/pack') && backend.received.some((r) => r.url === '/alpha/v2/ship'), 10_000);

  // The kept streams stayed open: gamma's event reaches SSE and gRPC, and the MCP session still answers.
  await eventually(() => keptSse.types.includes('OrderPackedV1'), 10_000);
  await eventually(() => keptGrpc.events.some((event) => event.type === 'OrderPackedV1'), 10_000);
  expect(keptGrpc.error()).toBeUndefined();
  expect((await keptMcp.listTools()).tools.length).toBeGreaterThan(0);

  const after = (await status(base)).config;
  expect(after.generation.hash).not.toBe(before.generation.hash);
  expect(after.lastReload).toMatchObject({ outcome: 'applied', generation: after.generation });
  expect(await metric(base, 'proto_gateway_config_reloads_total', '{outcome="applied"}')).toBe(1);
  expect(await metric(base, 'proto_gateway_config_generation_timestamp_seconds')).toBe(Date.parse(after.generation.loadedAt) / 1000);

  // An invalid file: nothing changes, the problem is logged as `validate` prints it.
  rewrite(`${yaml(ports, { after: false, watch })}events: { retention: { maxEvents: lots } }\n`);
  trigger();
  const invalid = await eventually(() => gateway.logs.find((line) => line.component === 'reload' && line.outcome === 'invalid'), 30_000, 100);
  expect(invalid.problems).toMatch(/gateway\.yaml:\d+:\d+: /);
  expect((await status(base)).config.generation).toEqual(after.generation);
  expect((await fetch(`${base}services/beta`, { headers: { 'X-Api-Key': KEEP } })).status).toBe(404);
  expect((await fetch(`${base}commands`, { headers: { 'X-Api-Key': OLD } })).status).toBe(401);
  expect((await post(base, NEW, envelope('PackOrder', 'pack-order/1.0', { n: 4 }))).status).toBe(201);

  gateway.signal('SIGTERM');
  expect(await gateway.exited).toEqual({ code: 0, signal: null });
}

describe('live configuration reload (spawned gateway, real clients)', () => {
  it('SIGHUP applies backends added, changed and removed and a rotated key in place; streams stay open but the old key\'s close; an invalid file changes nothing', async () => {
    await scenario((text) => {
      const file = join(tempDir(), 'gateway.yaml');
      writeFileSync(file, text.replace(', watchConfig: true', ''));
      const gateway = spawnGateway(file);
      return { gateway, rewrite: (next) => writeFileSync(file, next.replace(', watchConfig: true', '')), trigger: () => gateway.signal('SIGHUP') };
    });
  }, 180_000);

  it('server.watchConfig follows a Kubernetes ConfigMap symlink swap the same way, without a signal', async () => {
    await scenario((text) => {
      const volume = configMapDir(text);
      const gateway = spawnGateway(volume.file);
      return { gateway, rewrite: (next) => volume.swap(next), trigger: () => undefined };
    });
  }, 180_000);
});
