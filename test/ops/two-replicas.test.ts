import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { openLive } from '../bridges/sse/support.ts';
import { authorizePayment, ordersBackend, placeOrder, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, freePort, tempDir, track } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';

afterEach(closeAll);

/** Spawns `proto-gateway serve` on the shared Redis under `prefix` with `backends` (YAML lines); resolves with its base URL once ready. */
async function replica(prefix: string, backends: string): Promise<string> {
  return (await replicaProcess(prefix, backends)).base;
}

/** `replica`, with the process. */
async function replicaProcess(prefix: string, backends: string) {
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }
${backends ? `backends:\n${backends}` : ''}`);
  const gateway = spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
  return { base, process: gateway };
}

describe('two gateway processes on one Redis prefix', () => {
  it('streams (SSE) from one replica the result event another replica ingested', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
    const [ingesting, streaming] = await Promise.all([
      replica(prefix, `  - id: payments\n    kind: proto\n    url: "${payments.url}"\n    events: { follow: stream, interval: 100ms }\n`),
      // Follows no backend: whatever it streams came through the shared log.
      replica(prefix, ''),
    ]);
    const command = authorizePayment();
    const live = await openLive(`${streaming}events/stream?correlationId=${command.id}`);
    expect((await post(`${ingesting}services/payments/commands`, command)).status).toBe(201);
    const [record] = await live.events(1, 30_000);
    expect(JSON.parse(record.data)).toMatchObject({ correlationid: command.id });
    live.close();
  }, 120_000);

  it('delivers the same command id sent to both replicas to the backend once', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const backend = await scriptedBackend((_req, res) => sendJson(res, 201, { ok: true }));
    const [a, b] = await Promise.all([replica(prefix, ordersBackend(backend.url)), replica(prefix, ordersBackend(backend.url))]);
    const command = placeOrder();
    const answers = await Promise.all([post(`${a}commands`, command), post(`${b}commands`, command), post(`${a}commands`, command), post(`${b}commands`, command)]);
    for (const answer of answers) expect([200, 201]).toContain(answer.status);
    // The result event is in the shared log once the one delivery finished; both replicas see it.
    for (const base of [a, b]) {
      await eventually(async () => (await (await fetch(`${base}events?correlationId=${command.id}`)).json()).events.length === 1, 30_000, 100);
    }
    const deliveries = () => backend.received.filter((r) => r.headers['x-request-id'] === command.id).length;
    expect(deliveries()).toBe(1);
    // Give both replicas the round trip of another command to deliver a second copy, had one been queued.
    const later = placeOrder();
    expect((await post(`${b}commands`, later)).status).toBe(201);
    await eventually(() => backend.received.some((r) => r.headers['x-request-id'] === later.id), 30_000);
    expect(deliveries()).toBe(1);
  }, 120_000);
});

/** This replica's `proto_gateway_ingest_lease_held` for `backend` (undefined when absent). */
async function leaseHeld(base: string, backend: string): Promise<number | undefined> {
  const text = await (await fetch(`${base}metrics`, { headers: { 'x-api-key': 'ops-key' } })).text();
  const line = text.split('\n').find((l) => l.startsWith(`proto_gateway_ingest_lease_held{backend="${backend}"}`));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('ingestion leases across gateway processes', () => {
  it('one replica follows a backend; after kill -9 of it the other takes over, nothing lost or doubled', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
    const follows = `  - id: payments\n    kind: proto\n    url: "${payments.url}"\n    events: { follow: poll, interval: 100ms }\n`;
    const started = await Promise.all([replicaProcess(prefix, follows), replicaProcess(prefix, follows)]);
    const held: Array<number | undefined> = await eventually(async () => {
      const states = await Promise.all(started.map((r) => leaseHeld(r.base, 'payments')));
      return states.filter((s) => s === 1).length === 1 && states.filter((s) => s === 0).length === 1 ? states : undefined;
    }, 30_000, 100);
    const holder = started[held.indexOf(1)];
    const other = started[held.indexOf(0)];
    const before = payments.emit('PaymentRefundedV1', { orderId: 'o-1' });
    await eventually(async () => (await (await fetch(`${other.base}events?type=PaymentRefundedV1`)).json()).events.length === 1, 30_000, 100);

    holder.process.signal('SIGKILL');
    await holder.process.exited;
    const after = payments.emit('PaymentRefundedV1', { orderId: 'o-2' });
    await eventually(async () => (await leaseHeld(other.base, 'payments')) === 1, 60_000, 200);
    const events: Array<{ id: string }> = await eventually(async () => {
      const page = (await (await fetch(`${other.base}events?type=PaymentRefundedV1`)).json()).events as Array<{ id: string }>;
      return page.length >= 2 ? page : undefined;
    }, 60_000, 200);
    expect(events.map((e) => e.id)).toEqual([before.id, after.id]);
  }, 180_000);
});
