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
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }
${backends ? `backends:\n${backends}` : ''}`);
  spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
  return base;
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
