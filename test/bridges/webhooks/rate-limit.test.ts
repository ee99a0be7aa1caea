/**
 * Per-endpoint rate (issue 28): `webhook.rateLimit.perSecond` on a subscription (default
 * `webhooks.rateLimit.perSecond`); deliveries beyond it wait in the queue, never dropped; on Redis
 * the rate holds across replicas (two dispatchers, one receiver, arrivals counted per second).
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryDispatcher, type DeliveryPoster } from '../../../src/bridges/webhooks/delivery-dispatcher.ts';
import { MemoryDeliveryRateLimit } from '../../../src/bridges/webhooks/DeliveryRateLimit.ts';
import { OperationalEvents } from '../../../src/bridges/webhooks/operational-events.ts';
import { RedisDeliveryQueue } from '../../../src/bridges/webhooks/redis-delivery-queue.ts';
import { RedisDeliveryRateLimit } from '../../../src/bridges/webhooks/redis-delivery-rate-limit.ts';
import { RedisSubscriptionStore } from '../../../src/bridges/webhooks/redis-subscription-store.ts';
import { MemoryEventLog } from '../../../src/log/memory.ts';
import { webhookMetrics } from '../../../src/metrics/webhooks.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { deliveryRateLimitContract } from './delivery-rate-limit-contract.ts';
import { appendEvents, startReceiver, subscribe, tableResolver, webhooksYaml } from './support.ts';
import { subscription } from './subscription-store-contract.ts';

afterEach(closeAll);

deliveryRateLimitContract('memory', () => new MemoryDeliveryRateLimit());
const prefixes: string[] = [];
deliveryRateLimitContract('redis', () => {
  const prefix = randomPrefix();
  prefixes.push(prefix);
  return new RedisDeliveryRateLimit({ url: SHARED_REDIS_URL, prefix });
});
afterEach(async () => {
  for (const prefix of prefixes.splice(0)) await deletePrefix(SHARED_REDIS_URL, prefix);
});

const poster: DeliveryPoster = {
  async post(url, headers, body) {
    try {
      const res = await request(url, { method: 'POST', headers, body });
      await res.body.dump();
      return { status: res.statusCode };
    } catch (err) {
      return { error: (err as Error).message };
    }
  },
};

async function replica(prefix: string) {
  const redis = { url: SHARED_REDIS_URL, prefix };
  const queue = new RedisDeliveryQueue(redis);
  const subscriptions = new RedisSubscriptionStore(redis);
  const limiter = new RedisDeliveryRateLimit(redis);
  await Promise.all([queue.open(), subscriptions.open(), limiter.open()]);
  const logger = pino({ level: 'silent' });
  const log = new MemoryEventLog();
  await log.open();
  const dispatcher = new DeliveryDispatcher({
    queue, subscriptions, client: poster, scheduleMs: [100], concurrency: 8, leaseMs: 30_000, metrics: webhookMetrics(new Registry()), logger,
    events: new OperationalEvents(log, logger), disableAfter: { durationMs: 0, failures: 1 }, rateLimit: { limiter, defaultPerSecond: 0 },
  });
  return {
    queue, subscriptions, dispatcher,
    async close() {
      await dispatcher.close();
      await Promise.all([queue.close(), subscriptions.close(), limiter.close()]);
    },
  };
}

/** The most arrivals within any window of `windowMs`. */
function busiestWindow(times: number[], windowMs: number): number {
  let most = 0;
  for (let i = 0, j = 0; i < times.length; i += 1) {
    while (times[i]! - times[j]! >= windowMs) j += 1;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

describe('per-endpoint rate', () => {
  it('holds webhook.rateLimit across two replicas on Redis: every delivery arrives once, never more than perSecond in a second (+10 %)', async () => {
    const arrivals: number[] = [];
    const receiver = await startReceiver(() => {
      arrivals.push(Date.now());
      return { status: 204 };
    });
    const prefix = randomPrefix();
    const [a, b] = await Promise.all([replica(prefix), replica(prefix)]);
    try {
      await a.subscriptions.create(subscription('sub-1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook`, rateLimit: { perSecond: 20 } }));
      const count = 80;
      const now = Date.now();
      await a.queue.enqueue(Array.from({ length: count }, (_, i) => ({
        id: `msg-${i}`, subscriptionId: 'sub-1', eventId: `evt-${i}`, eventType: 'OrderPlacedV1', payload: JSON.stringify({ id: `evt-${i}` }), nextAttemptMs: now,
      })), now);
      await Promise.all([a.dispatcher.start(), b.dispatcher.start()]);
      await expect.poll(async () => (await a.queue.counts()).succeeded, { timeout: 60_000, interval: 200 }).toBe(count);
      const ids = receiver.requests.map((r) => JSON.parse(r.body).id as string);
      expect(new Set(ids).size).toBe(count);
      expect(ids).toHaveLength(count);
      expect(busiestWindow(arrivals, 1000)).toBeLessThanOrEqual(22);
      expect(arrivals.at(-1)! - arrivals[0]!).toBeGreaterThanOrEqual(((count - 1) / 22) * 1000);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  }, 90_000);

  it('takes webhook.rateLimit at creation (shown in the descriptor), refuses bad values, and applies the config default', async () => {
    const gw = await startTestGateway(gatewayYaml(webhooksYaml('[50ms]', '  rateLimit: { perSecond: 5 }\n')), {}, undefined, { resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }) });
    const receiver = await startReceiver();
    const created = await subscribe(gw, { webhook: { url: receiver.url(), rateLimit: { perSecond: 2.5 } } });
    expect(created.status).toBe(201);
    expect((await getJson(`${gw.url}subscriptions/${created.body.id}`)).body.webhook).toEqual({ url: receiver.url(), rateLimit: { perSecond: 2.5 } });
    for (const rateLimit of [{ perSecond: 0 }, { perSecond: -1 }, { perSecond: '5' }, { perSecond: 1e9 }, 5]) {
      const res = await subscribe(gw, { webhook: { url: receiver.url(), rateLimit } });
      expect(res.status, JSON.stringify(rateLimit)).toBe(400);
      expect(res.body.error.code).toBe('INVALID_PARAMETER');
    }
    // The default (5/s) for a subscription without its own: 10 events take about 2 s, none dropped.
    const arrivals: number[] = [];
    const paced = await startReceiver(() => {
      arrivals.push(Date.now());
      return { status: 204 };
    });
    await subscribe(gw, { webhook: { url: paced.url() } });
    await appendEvents(gw, ...Array.from({ length: 10 }, () => 'OrderPlacedV1'));
    await eventually(() => paced.requests.length === 10, 30_000);
    expect(busiestWindow(arrivals, 1000)).toBeLessThanOrEqual(6);
  }, 60_000);
});
