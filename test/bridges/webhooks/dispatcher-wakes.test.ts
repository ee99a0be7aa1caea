/**
 * What the dispatcher asks of its queue per delivery (issue 28): the write that records a success
 * also claims what takes its slot, so a healthy stream of deliveries costs no claim of its own.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { ClaimedDelivery, FinishedAttempt, Settlement } from '../../../src/bridges/webhooks/DeliveryQueue.ts';
import { DeliveryDispatcher } from '../../../src/bridges/webhooks/delivery-dispatcher.ts';
import { MemoryDeliveryQueue } from '../../../src/bridges/webhooks/memory-delivery-queue.ts';
import { MemorySubscriptionStore } from '../../../src/bridges/webhooks/memory-subscription-store.ts';
import { OperationalEvents } from '../../../src/bridges/webhooks/operational-events.ts';
import { DeliveryClient } from '../../../src/egress/delivery-client.ts';
import { SsrfGuard } from '../../../src/egress/ssrf-guard.ts';
import { MemoryEventLog } from '../../../src/log/memory.ts';
import { webhookMetrics } from '../../../src/metrics/webhooks.ts';
import { closeAll, eventually, track } from '../../support/gateway.ts';
import { newDelivery } from './delivery-queue-contract.ts';
import { subscription } from './subscription-store-contract.ts';
import { startReceiver } from './support.ts';

afterEach(closeAll);

/** A memory queue that counts its `claim` calls other than the settles' own. */
class CountingQueue extends MemoryDeliveryQueue {
  claims = 0;
  #settling = false;
  override claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    if (!this.#settling) this.claims += 1;
    return super.claim(nowMs, limit, leaseMs);
  }
  override async settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement> {
    this.#settling = true;
    try {
      return await super.settle(attempts, nowMs, limit, leaseMs);
    } finally {
      this.#settling = false;
    }
  }
}

/** A started dispatcher of `queue` over `subscriptions` (real delivery client on loopback), closed after the test. */
async function startDispatcher(queue: MemoryDeliveryQueue, subscriptions: MemorySubscriptionStore, concurrency: number, timeoutMs: number, idleMs?: number): Promise<DeliveryDispatcher> {
  const log = new MemoryEventLog();
  await log.open();
  const logger = pino({ level: 'silent' });
  const client = track(new DeliveryClient({ guard: new SsrfGuard({ allowHttp: true, allowPrivateNetworks: ['127.0.0.0/8'] }), timeoutMs }));
  const dispatcher = new DeliveryDispatcher({
    queue, subscriptions, client, scheduleMs: [], concurrency, leaseMs: 60_000, ...(idleMs !== undefined && { idleMs }),
    metrics: webhookMetrics(new Registry()), logger, events: new OperationalEvents(log, logger), disableAfter: { durationMs: 0, failures: 0 },
  });
  track({ close: () => dispatcher.close() });
  await dispatcher.start();
  return dispatcher;
}

describe('dispatcher wake-ups', () => {
  it('does not claim again after each successful attempt: the write of its outcome refilled the slot', async () => {
    const receiver = await startReceiver(() => ({ status: 204 }));
    const store = new MemorySubscriptionStore();
    await store.create(subscription('s1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook` }));
    const queue = new CountingQueue();
    // No look of its own while the test runs: every claim counted is one a wake or an outcome asked for.
    const dispatcher = await startDispatcher(queue, store, 64, 5_000, 60_000);
    const now = Date.now();
    await queue.enqueue(Array.from({ length: 40 }, (_, i) => newDelivery(`d-${i}`, 's1', now)), now);
    dispatcher.wake();
    await eventually(async () => (await queue.counts()).succeeded === 40);
    expect(receiver.requests).toHaveLength(40);
    // The enqueue's wake claims the first 4 (the subscription's limit); the other 36 are claimed by the outcomes' writes.
    expect(queue.claims).toBeLessThanOrEqual(3);
  });

  it('claims a retry when it falls due although a slow attempt is still in flight and the successes around it woke no one', async () => {
    // The slow receiver holds its answer far longer than the test waits: the retry must not wait for it.
    const slow = await startReceiver(() => ({ status: 204, delayMs: 20_000 }));
    const fast = await startReceiver(() => ({ status: 204 }));
    const store = new MemorySubscriptionStore();
    await store.create(subscription('slow', 'alice', { url: `http://127.0.0.1:${slow.port}/hook` }));
    await store.create(subscription('fast', 'alice', { url: `http://127.0.0.1:${fast.port}/hook` }));
    const queue = new MemoryDeliveryQueue();
    await queue.open();
    const now = Date.now();
    // Both slots fill with work still due (so no timer is armed then); the fast successes refill each
    // other; the retry falls due after the last of them, while the slow attempt holds the other slot.
    await queue.enqueue([newDelivery('s-1', 'slow', now - 20)], now);
    await queue.enqueue(['f-1', 'f-2', 'f-3'].map((id) => newDelivery(id, 'fast', now - 10)), now);
    await queue.enqueue([newDelivery('r', 'fast', now + 500)], now);
    const dispatcher = await startDispatcher(queue, store, 2, 30_000);
    await eventually(() => fast.requests.some((request) => request.body.includes('evt-r')), 8_000);
    expect(fast.requests).toHaveLength(4);
    expect(slow.requests).toHaveLength(1);
    // The receiver logs the retry before its answer reaches the dispatcher: the retry's slot frees a moment later, the slow one's does not.
    await eventually(() => dispatcher.inFlight === 1, 2_000);
    expect(dispatcher.inFlight).toBe(1);
    expect(slow.requests).toHaveLength(1);
  });

  it('takes over the deliveries another replica claimed and died with after its own last look found the queue empty', async () => {
    const receiver = await startReceiver(() => ({ status: 204 }));
    const store = new MemorySubscriptionStore();
    await store.create(subscription('s1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook` }));
    // The queue stands for the shared store: the dispatcher looks at it first while it is empty.
    const queue = new CountingQueue();
    await startDispatcher(queue, store, 4, 5_000);
    await eventually(() => queue.claims > 0);
    // Another replica enqueues two deliveries, claims them for a short lease and dies: nothing wakes this one.
    const now = Date.now();
    await queue.enqueue(['d-1', 'd-2'].map((id) => newDelivery(id, 's1', now)), now);
    expect(await queue.claim(now, 10, 200)).toHaveLength(2);
    await eventually(async () => (await queue.counts()).succeeded === 2, 8_000);
    expect(receiver.requests).toHaveLength(2);
  });
});
