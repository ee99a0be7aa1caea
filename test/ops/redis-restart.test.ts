/**
 * Redis restarted under load: two gateway processes on a Redis of the test's own (AOF with
 * `appendfsync always`, so what was acknowledged survives), a legacy backend taking commands and a
 * protocol backend whose events are ingested and pushed to a webhook. Commands flow to both replicas
 * without pause while Redis is killed (-9) and started again on the same port and data directory.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { startReceiver } from '../bridges/webhooks/support.ts';
import { ordersBackend, placeOrder, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, freePort, tempDir, track } from '../support/gateway.ts';
import { spawnGateway, type GatewayProcess } from '../support/process.ts';
import { PrivateRedis, randomPrefix } from '../support/redis.ts';

afterEach(closeAll);

/** One answer to a command sent under load, and whether Redis was down for the whole exchange. */
interface Answer {
  id: string;
  status: number;
  code?: string;
  duringOutage: boolean;
}

/** Spawns `proto-gateway serve` on `redisUrl` with `backends` (YAML lines); resolves once it is ready. */
async function replica(redisUrl: string, prefix: string, backends: string): Promise<{ base: string; process: GatewayProcess }> {
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: redis, url: "${redisUrl}", prefix: "${prefix}" }
commands: { dispatch: { timeout: 1s, concurrency: 4, retry: { schedule: [100ms, 500ms, 1s, 2s] } } }
webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8], retry: { schedule: [100ms, 500ms, 1s, 2s] } }
backends:
${backends}`);
  const gateway = spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
  return { base, process: gateway };
}

const status = async (url: string) => (await fetch(url)).status;

describe('Redis restarted under load', () => {
  it('refuses with 503 while Redis is away, crashes nothing, loses and doubles no accepted command, and resumes ingestion and deliveries', async () => {
    const redis = await PrivateRedis.start(['--appendonly', 'yes', '--appendfsync', 'always']);
    track({ close: () => redis.dispose() });
    const orders = await scriptedBackend((_req, res) => sendJson(res, 201, { ok: true }));
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
    const receiver = await startReceiver();
    const backends = `${ordersBackend(orders.url)}  - id: payments
    kind: proto
    url: "${payments.url}"
    events: { follow: poll, interval: 100ms }
`;
    const prefix = randomPrefix();
    const replicas = await Promise.all([replica(redis.url, prefix, backends), replica(redis.url, prefix, backends)]);
    const subscribed = await post(`${replicas[0]!.base}subscriptions`, { webhook: { url: `http://127.0.0.1:${receiver.port}/hook` }, filter: { types: ['PaymentRefundedV1'] } });
    expect(subscribed.status).toBe(201);
    const pushed = (eventId: string) => receiver.requests.some((r) => JSON.parse(r.body).id === eventId);
    const before = payments.emit('PaymentRefundedV1', { orderId: 'before' });
    await eventually(() => pushed(before.id), 30_000, 50);

    // Load: two senders per replica, each one command at a time, until told to stop.
    let outage = false;
    let stop = false;
    const answers: Answer[] = [];
    const sender = async (base: string) => {
      while (!stop) {
        const command = placeOrder();
        const wasDown = outage;
        const answer = await post(`${base}commands`, command);
        answers.push({ id: command.id as string, status: answer.status, code: answer.body?.error?.code, duringOutage: wasDown && outage });
      }
    };
    const senders = replicas.flatMap(({ base }) => [sender(base), sender(base)]);
    const accepted = () => answers.filter((a) => a.status === 201).length;
    await eventually(() => accepted() >= 40, 30_000, 20);

    await redis.crash();
    outage = true;
    for (const { base } of replicas) await eventually(async () => (await status(`${base}readyz`)) === 503, 20_000, 50);
    const during = payments.emit('PaymentRefundedV1', { orderId: 'during' });
    await eventually(() => answers.filter((a) => a.duringOutage).length >= 20, 20_000, 20);
    outage = false;
    await redis.start();

    for (const { base } of replicas) await eventually(async () => (await status(`${base}readyz`)) === 200, 20_000, 50);
    const acceptedBack = accepted();
    await eventually(() => accepted() >= acceptedBack + 40, 30_000, 20);
    stop = true;
    await Promise.all(senders);

    // While Redis was away every command was refused with the error body; nothing else but 201 or that.
    const refusedDuring = answers.filter((a) => a.duringOutage);
    expect(refusedDuring.every((a) => a.status === 503 && a.code === 'STORE_UNAVAILABLE')).toBe(true);
    expect(answers.filter((a) => a.status !== 201 && !(a.status === 503 && a.code === 'STORE_UNAVAILABLE'))).toEqual([]);

    // Every command answered 201 reached the backend exactly once; a refused one at most once (its
    // write may have happened with only the reply lost).
    const received = () => {
      const byId = new Map<string, number>();
      for (const { headers } of orders.received) byId.set(String(headers['x-request-id']), (byId.get(String(headers['x-request-id'])) ?? 0) + 1);
      return byId;
    };
    const acceptedIds = answers.filter((a) => a.status === 201).map((a) => a.id);
    // Settled: every accepted command arrived and neither replica's outbox holds anything more to send.
    // When it does not settle, the error names what is missing and what each replica logged of it.
    await eventually(async () => {
      const depths = await Promise.all(replicas.map(async ({ base }) => /^proto_gateway_outbox_depth (\S+)$/m.exec(await (await fetch(`${base}metrics`)).text())?.[1]));
      const missing = acceptedIds.filter((id) => !received().has(id));
      if (missing.length === 0 && depths.every((depth) => depth === '0')) return true;
      const logged = replicas.map(({ process }) => process.logs.filter((line) => missing.includes(line.command)).map((line) => line.msg));
      throw new Error(`outbox depth ${depths.join(', ')}; ${missing.length} accepted not received: ${JSON.stringify(missing.slice(0, 5))}, logged ${JSON.stringify(logged)}`);
    }, 30_000, 100);
    expect(acceptedIds.filter((id) => received().get(id) !== 1)).toEqual([]);
    expect([...received().values()].filter((n) => n > 1)).toEqual([]);

    // Ingestion and webhook deliveries resumed: the event emitted during the outage and one after it
    // are ingested (once) and pushed.
    const after = payments.emit('PaymentRefundedV1', { orderId: 'after' });
    await eventually(() => pushed(during.id) && pushed(after.id), 30_000, 50);
    for (const { base } of replicas) {
      const events = (await (await fetch(`${base}events?type=PaymentRefundedV1`)).json()).events as Array<{ id: string }>;
      expect(events.map((e) => e.id)).toEqual([before.id, during.id, after.id]);
    }

    // No process died on the way.
    for (const { base, process } of replicas) {
      expect(process.child.exitCode).toBeNull();
      expect(process.child.signalCode).toBeNull();
      expect(await status(`${base}healthz`)).toBe(200);
    }
  }, 120_000);
});
