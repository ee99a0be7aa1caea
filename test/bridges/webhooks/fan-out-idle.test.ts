/**
 * The webhook fan-out costs nothing while no subscription is active (issue 29): appends make it
 * read no event and write no checkpoint of their own, yet its position still follows the log (so
 * retention is not held back), and a subscription created afterwards gets the events after it.
 */
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { FANOUT_CHECKPOINT, IDLE_SAVE_MS, WebhookFanOut } from '../../../src/bridges/webhooks/fan-out.ts';
import { MemoryDeliveryQueue } from '../../../src/bridges/webhooks/memory-delivery-queue.ts';
import { MemorySubscriptionStore } from '../../../src/bridges/webhooks/memory-subscription-store.ts';
import type { Checkpoint, EventFilter } from '../../../src/log/EventLog.ts';
import { MemoryEventLog } from '../../../src/log/memory.ts';
import { cloudEvent } from '../../log/fixtures/cloud-event.ts';
import { eventually } from '../../support/gateway.ts';

/** The real memory log, counting the reads of events and the checkpoint writes it is asked for. */
class CountingLog extends MemoryEventLog {
  queries = 0;
  saves = 0;
  override query(filter: EventFilter, after: number, limit: number) {
    this.queries++;
    return super.query(filter, after, limit);
  }
  override saveCheckpoint(checkpoint: Checkpoint) {
    if (checkpoint.key === FANOUT_CHECKPOINT) this.saves++;
    return super.saveCheckpoint(checkpoint);
  }
}

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0)) await close();
});

async function fanOutOn(log: CountingLog, subscriptions = new MemorySubscriptionStore(), queue = new MemoryDeliveryQueue()) {
  const fanOut = new WebhookFanOut({ log, subscriptions, queue, maxQueued: 1000, onEnqueued: () => {}, logger: pino({ level: 'silent' }) });
  await fanOut.start();
  closing.push(() => fanOut.close());
  return { fanOut, subscriptions, queue };
}

describe('webhook fan-out with no subscription', () => {
  it('reads no event and saves its position at most once per IDLE_SAVE_MS, following the log head', async () => {
    const log = new CountingLog();
    await log.open();
    const { fanOut } = await fanOutOn(log);
    const savesAtStart = log.saves;
    for (let i = 0; i < 20; i++) {
      await log.append([{ event: cloudEvent(`evt-${i}`) }]);
      await fanOut.settled();
    }
    expect(log.queries).toBe(0);
    expect(log.saves - savesAtStart).toBe(0);
    // Within IDLE_SAVE_MS the checkpoint reaches the head in one write: retention is not held back.
    await eventually(async () => (await log.checkpoint(FANOUT_CHECKPOINT)) === String(await log.head()), IDLE_SAVE_MS * 5);
    expect(log.saves - savesAtStart).toBe(1);
  });

  it('fans out to a subscription created later the events appended after it, and only those', async () => {
    const log = new CountingLog();
    await log.open();
    const { fanOut, subscriptions, queue } = await fanOutOn(log);
    await log.append([{ event: cloudEvent('before') }]);
    await fanOut.settled();
    await subscriptions.create({ id: 'sub-1', principal: 'ops', url: 'https://receiver.example/hook', status: 'active', createdAt: new Date().toISOString(), afterPosition: await log.head() });
    await log.append([{ event: cloudEvent('after') }]);
    await fanOut.settled();
    const { deliveries } = await queue.list('sub-1', { after: 0, limit: 10 });
    expect(deliveries.map((d) => d.eventId)).toEqual(['after']);
  });

  it('saves a pending position when it closes', async () => {
    const log = new CountingLog();
    await log.open();
    const { fanOut } = await fanOutOn(log);
    await log.append([{ event: cloudEvent('one') }, { event: cloudEvent('two') }]);
    await fanOut.settled();
    await fanOut.close();
    expect(await log.checkpoint(FANOUT_CHECKPOINT)).toBe(String(await log.head()));
  });
});

describe('webhook fan-out checkpoint', () => {
  it('saves its position at most once per IDLE_SAVE_MS while it fans out page after page; a restart from it enqueues nothing twice', async () => {
    const log = new CountingLog();
    await log.open();
    const subscriptions = new MemorySubscriptionStore();
    const queue = new MemoryDeliveryQueue();
    await subscriptions.create({ id: 'sub-1', principal: 'ops', url: 'https://receiver.example/hook', status: 'active', createdAt: new Date().toISOString(), afterPosition: 0 });
    const { fanOut } = await fanOutOn(log, subscriptions, queue);
    const savesAtStart = log.saves;
    for (let i = 0; i < 20; i++) {
      await log.append([{ event: cloudEvent(`evt-${i}`) }]);
      await fanOut.settled();
    }
    expect(await queue.unfinished()).toBe(20);
    expect(log.saves - savesAtStart).toBe(0);
    const lagging = await log.checkpoint(FANOUT_CHECKPOINT);
    await eventually(async () => (await log.checkpoint(FANOUT_CHECKPOINT)) === String(await log.head()), IDLE_SAVE_MS * 5);
    expect(log.saves - savesAtStart).toBe(1);
    // A crash before that save: a fan-out started from the position saved before enqueues the same message ids, which the queue skips.
    await log.saveCheckpoint({ key: FANOUT_CHECKPOINT, value: lagging! });
    await fanOut.close();
    const restarted = await fanOutOn(log, subscriptions, queue);
    await restarted.fanOut.settled();
    expect(await queue.unfinished()).toBe(20);
    expect((await queue.list('sub-1', { after: 0, limit: 100 })).deliveries.map((d) => d.eventId)).toEqual(Array.from({ length: 20 }, (_, i) => `evt-${i}`));
  });
});
