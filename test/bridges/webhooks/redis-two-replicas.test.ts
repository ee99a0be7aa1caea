/**
 * Two replicas' webhook dispatchers on one Redis prefix (the queue and subscriptions shared), posting
 * over real HTTP to a loopback receiver that counts deliveries per event id: every delivery arrives
 * exactly once, and the replicas' `claims{claimed}` add up to the number of deliveries; an outcome
 * that Redis could not take (it was restarting) is recorded once it is back. Then two
 * gateway processes: kill -9 of the one whose attempts are in flight, and the other takes its
 * deliveries over when their lease runs out.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../../examples/payments-service.ts';
import { DeliveryDispatcher, type DeliveryPoster } from '../../../src/bridges/webhooks/delivery-dispatcher.ts';
import { OperationalEvents } from '../../../src/bridges/webhooks/operational-events.ts';
import { MemoryEventLog } from '../../../src/log/memory.ts';
import { RedisDeliveryQueue } from '../../../src/bridges/webhooks/redis-delivery-queue.ts';
import { RedisSubscriptionStore } from '../../../src/bridges/webhooks/redis-subscription-store.ts';
import { webhookMetrics } from '../../../src/metrics/webhooks.ts';
import { closeAll, eventually, track } from '../../support/gateway.ts';
import { deletePrefix, PrivateRedis, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { claims, holdingReceiver, startReceiver, webhookGatewayProcess } from './support.ts';
import { subscription } from './subscription-store-contract.ts';

/** Posts to the loopback receiver (the test's URL names 127.0.0.1 directly). */
const poster: DeliveryPoster = {
  async post(url, headers, body, signal) {
    try {
      const res = await request(url, { method: 'POST', headers, body, ...(signal && { signal }) });
      await res.body.dump();
      return { status: res.statusCode };
    } catch (err) {
      return { error: (err as Error).message };
    }
  },
};

async function replica(prefix: string, url = SHARED_REDIS_URL, client: DeliveryPoster = poster) {
  const queue = new RedisDeliveryQueue({ url, prefix });
  const subscriptions = new RedisSubscriptionStore({ url, prefix });
  await queue.open();
  await subscriptions.open();
  const registry = new Registry();
  const metrics = webhookMetrics(registry);
  const logger = pino({ level: 'silent' });
  const log = new MemoryEventLog();
  await log.open();
  const events = new OperationalEvents(log, logger);
  const disableAfter = { durationMs: 0, failures: 1 };
  const dispatcher = new DeliveryDispatcher({ queue, subscriptions, client, scheduleMs: [100], concurrency: 8, leaseMs: 30_000, metrics, logger, events, disableAfter });
  const claimed = async () => (await metrics.claims.get()).values.find((v) => v.labels.outcome === 'claimed')?.value ?? 0;
  return {
    queue, subscriptions, dispatcher, claimed,
    async close() {
      await dispatcher.close();
      await queue.close();
      await subscriptions.close();
    },
  };
}

describe('webhook deliveries with two replicas on one Redis', () => {
  it('delivers each event once across both replicas', async () => {
    const receiver = await startReceiver();
    const prefix = randomPrefix();
    const [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
    try {
      await a.subscriptions.create(subscription('sub-1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook` }));
      const count = 60;
      const deliveries = Array.from({ length: count }, (_, i) => ({
        id: `msg-${i}`, subscriptionId: 'sub-1', eventId: `evt-${i}`, eventType: 'OrderPlacedV1', payload: JSON.stringify({ id: `evt-${i}` }), nextAttemptMs: Date.now(),
      }));
      // Both replicas' fan-outs enqueue the same deliveries (same ids): the queue keeps one of each.
      await Promise.all([a.queue.enqueue(deliveries, Date.now()), b.queue.enqueue(deliveries, Date.now())]);
      await Promise.all([a.dispatcher.start(), b.dispatcher.start()]);
      await expect.poll(async () => (await a.queue.counts()).succeeded, { timeout: 30_000 }).toBe(count);
      const perEvent = new Map<string, number>();
      for (const req of receiver.requests) {
        const id = (JSON.parse(req.body) as { id: string }).id;
        perEvent.set(id, (perEvent.get(id) ?? 0) + 1);
      }
      expect(perEvent.size).toBe(count);
      expect([...perEvent.values()].every((n) => n === 1)).toBe(true);
      expect((await a.claimed()) + (await b.claimed())).toBe(count);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await receiver.close();
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  }, 60_000);
});

describe('a webhook dispatcher across a Redis restart', () => {
  it('records an attempt answered while Redis was down once it returns, instead of attempting it again', async () => {
    const server = await PrivateRedis.start(['--appendonly', 'yes', '--appendfsync', 'always']);
    track({ close: () => server.dispose() });
    let restarted: Promise<void> | undefined;
    const posted: string[] = [];
    // The receiver answers; Redis dies before the dispatcher can record the outcome, and comes back.
    const answeredThenRedisDies: DeliveryPoster = {
      async post(_url, headers) {
        posted.push(headers['webhook-id']!);
        if (!restarted) {
          await server.crash();
          restarted = server.start();
        }
        return { status: 204 };
      },
    };
    const r = await replica(randomPrefix(), server.url, answeredThenRedisDies);
    track(r);
    await r.subscriptions.create(subscription('sub-1', 'alice', { url: 'http://127.0.0.1:9/hook' }));
    await r.queue.enqueue([{ id: 'msg-1', subscriptionId: 'sub-1', eventId: 'evt-1', eventType: 'OrderPlacedV1', payload: '{}', nextAttemptMs: Date.now() }], Date.now());
    await r.dispatcher.start();
    await eventually(() => restarted !== undefined, 10_000);
    await restarted;
    await eventually(async () => (await r.queue.counts().catch(() => undefined))?.succeeded === 1, 20_000, 100);
    expect(posted).toEqual(['msg-1']);
  }, 30_000);
});

afterEach(closeAll);

describe('webhook delivery leases across gateway processes', () => {
  it('kill -9 of the replica whose attempts are in flight: the other takes them over after the lease; each delivered, only the interrupted ones twice', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const receiver = await holdingReceiver();
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
    const storage = `{ driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }`;
    const replicas = await Promise.all([webhookGatewayProcess(storage, payments.url), webhookGatewayProcess(storage, payments.url)]);
    const created = await fetch(`${replicas[0].base}subscriptions`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ webhook: { url: receiver.url } }),
    });
    expect(created.status).toBe(201);
    const count = 10;
    for (let i = 0; i < count; i++) payments.emit('PaymentRefundedV1', { orderId: `o-${i}` });
    // The subscription's 4 slots (across both replicas) are taken by attempts held at the receiver.
    await eventually(() => receiver.held() === 4, 30_000, 50);
    const claimed = await Promise.all(replicas.map((r) => claims(r.base, 'claimed')));
    const victim = claimed[0] >= claimed[1] ? 0 : 1;
    const survivor = replicas[1 - victim];
    replicas[victim].process.signal('SIGKILL');
    await replicas[victim].process.exited;
    receiver.release();

    await eventually(async () => new Set(receiver.arrivals).size === count && (await claims(survivor.base, 'reclaimed')) === claimed[victim], 60_000, 200);
    const perDelivery = new Map<string, number>();
    for (const id of receiver.arrivals) perDelivery.set(id, (perDelivery.get(id) ?? 0) + 1);
    // The victim's interrupted attempts arrived twice (once from each replica); every other delivery once.
    expect([...perDelivery.values()].filter((n) => n === 2)).toHaveLength(claimed[victim]);
    expect([...perDelivery.values()].every((n) => n <= 2)).toBe(true);
    expect(claimed[victim]).toBeGreaterThan(0);
  }, 120_000);
});
