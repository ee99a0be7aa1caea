/**
 * Graceful shutdown end to end, on a spawned gateway process: on SIGTERM readiness turns 503, new
 * requests are refused with 503 NOT_READY while /healthz still answers, an open SSE stream ends
 * with a final `: shutdown` comment, a command dispatch in flight finishes (its result event is in
 * the log afterwards), a webhook delivery in flight goes back to the queue (the next start delivers
 * it), and the process exits 0.
 */
import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../../src/log/sqlite.ts';
import { ordersBackend, placeOrder, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { startReceiver } from '../bridges/webhooks/support.ts';
import { closeAll, eventually, freePort, getJson, tempDir } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';

afterEach(closeAll);

/** Reads a stream body to its end as text (the gateway ends it; the test's timeout bounds it). */
async function readToEnd(body: ReadableStream<Uint8Array>, seen: string[]): Promise<string> {
  const decoder = new TextDecoder();
  for await (const chunk of body) seen.push(decoder.decode(chunk, { stream: true }));
  return seen.join('');
}

describe('graceful shutdown (SIGTERM)', () => {
  it('turns readiness 503, refuses new requests, ends SSE with ": shutdown", finishes the dispatch in flight and exits 0', async () => {
    let held: ServerResponse | undefined;
    const backend = await scriptedBackend((_req, res) => {
      held = res;
    });
    const dir = tempDir();
    const port = await freePort();
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, `server: { host: 127.0.0.1, port: ${port}, shutdownTimeout: 20s }
storage: { driver: sqlite, path: ./gateway.db }
commands: { dispatch: { timeout: 30s } }
backends:
${ordersBackend(backend.url)}`);
    const gateway = spawnGateway(file);
    const base = `http://127.0.0.1:${port}/`;
    await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);

    const stream = await fetch(`${base}events/stream`);
    expect(stream.status).toBe(200);
    const streamed: string[] = [];
    const streamText = readToEnd(stream.body as ReadableStream<Uint8Array>, streamed);
    await eventually(() => streamed.join('').includes('retry:'));
    const accepted = await post(`${base}commands`, placeOrder());
    expect(accepted.status).toBe(201);
    // The backend holds the dispatch: it is in flight when the signal comes.
    await eventually(() => held !== undefined, 30_000);

    gateway.signal('SIGTERM');
    const ready = await eventually(async () => {
      const res = await getJson(`${base}readyz`);
      return res.status === 503 ? res : undefined;
    }, 30_000);
    expect(ready.body).toMatchObject({ error: { code: 'NOT_READY', details: { pending: ['shutdown'] } } });
    const refused = await getJson(`${base}events`);
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ error: { code: 'NOT_READY' } });
    expect(refused.headers.get('connection')).toBe('close');
    expect((await getJson(`${base}healthz`)).status).toBe(200);
    const text = await streamText;
    expect(text.trimEnd().endsWith(': shutdown')).toBe(true);
    // Still draining: the dispatch in flight has not been answered yet.
    expect(gateway.child.exitCode).toBeNull();

    sendJson(held as ServerResponse, 201, { id: 'ord-1', sku: 'widget', qty: 2 });
    expect(await gateway.exited).toEqual({ code: 0, signal: null });
    expect(gateway.logs.some((line) => line.msg === 'stopped')).toBe(true);
    const log = new SqliteEventLog(join(dir, 'gateway.db'));
    await log.open();
    try {
      const page = await log.query({ type: 'OrderPlacedV1' }, 0, 10);
      expect(page.events.map((e) => e.event.data)).toEqual([{ id: 'ord-1', sku: 'widget', qty: 2 }]);
    } finally {
      await log.close();
    }
  }, 120_000);

  it('returns a webhook delivery in flight to the queue: the next start delivers it, under the same webhook-id', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 201, { id: 'ord-2' }));
    let answering = false;
    // The receiver holds every attempt until the gateway is gone; after the restart it answers 204.
    const receiver = await startReceiver(() => ({ status: 204, delayMs: answering ? 0 : 60_000 }));
    const dir = tempDir();
    const port = await freePort();
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, `server: { host: 127.0.0.1, port: ${port}, shutdownTimeout: 10s }
storage: { driver: sqlite, path: ./gateway.db }
webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8], timeout: 120s }
backends:
${ordersBackend(backend.url)}`);
    const base = `http://127.0.0.1:${port}/`;
    const first = spawnGateway(file);
    await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
    const subscription = await post(`${base}subscriptions`, { webhook: { url: `http://127.0.0.1:${receiver.port}/hook` }, filter: { types: ['OrderPlacedV1'] } });
    expect(subscription.status).toBe(201);
    expect((await post(`${base}commands`, placeOrder())).status).toBe(201);
    await eventually(() => receiver.requests.length === 1, 30_000);

    first.signal('SIGTERM');
    expect(await first.exited).toEqual({ code: 0, signal: null });

    answering = true;
    const second = spawnGateway(file);
    await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
    const succeeded = await eventually(async () => {
      const list = (await getJson(`${base}subscriptions/${subscription.body.id}/deliveries?status=succeeded`)).body.deliveries;
      return list.length === 1 ? list : undefined;
    }, 30_000);
    expect(succeeded).toHaveLength(1);
    const ids = new Set(receiver.requests.map((r) => (r.headers as IncomingHttpHeaders)['webhook-id']));
    expect(receiver.requests.length).toBe(2);
    expect(ids.size).toBe(1);
    second.signal('SIGTERM');
    expect(await second.exited).toEqual({ code: 0, signal: null });
  }, 180_000);
});
