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

describe('dispatcher wake-ups', () => {
  it('does not claim again after each successful attempt: the write of its outcome refilled the slot', async () => {
    const receiver = await startReceiver(() => ({ status: 204 }));
    const log = new MemoryEventLog();
    await log.open();
    const store = new MemorySubscriptionStore();
    await store.create(subscription('s1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook` }));
    const queue = new CountingQueue();
    const logger = pino({ level: 'silent' });
    const client = track(new DeliveryClient({ guard: new SsrfGuard({ allowHttp: true, allowPrivateNetworks: ['127.0.0.0/8'] }), timeoutMs: 5000 }));
    const dispatcher = new DeliveryDispatcher({
      queue, subscriptions: store, client, scheduleMs: [], concurrency: 64, leaseMs: 10_000,
      metrics: webhookMetrics(new Registry()), logger, events: new OperationalEvents(log, logger), disableAfter: { durationMs: 0, failures: 0 },
    });
    track({ close: () => dispatcher.close() });
    await dispatcher.start();
    const now = Date.now();
    await queue.enqueue(Array.from({ length: 40 }, (_, i) => newDelivery(`d-${i}`, 's1', now)), now);
    dispatcher.wake();
    await eventually(async () => (await queue.counts()).succeeded === 40);
    expect(receiver.requests).toHaveLength(40);
    // The enqueue's wake claims the first 4 (the subscription's limit); the other 36 are claimed by the outcomes' writes.
    expect(queue.claims).toBeLessThanOrEqual(3);
  });
});
