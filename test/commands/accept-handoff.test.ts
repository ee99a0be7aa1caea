/**
 * The dispatcher as the group commit's `AcceptHandoff` (issue 29): commands claimed in their
 * accept's commit go into the lane from memory, and the lane never holds more than
 * `commands.dispatch.concurrency` attempts, even when a handover lands while the dispatcher's own
 * claim is in flight.
 */
import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxEntry } from '../../src/commands/CommandStore.ts';
import type { CommandDelivery, DeliveryOutcome } from '../../src/commands/delivery.ts';
import { Dispatcher } from '../../src/commands/dispatcher.ts';
import { GroupCommitter } from '../../src/commands/group-commit.ts';
import { MemoryCommandStore } from '../../src/commands/memory-store.ts';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { commandMetrics } from '../../src/metrics/commands.ts';
import { eventually } from '../support/gateway.ts';
import { outboxEntry, record } from './store-contract.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A backend adapter whose attempts wait until released; it records how many are in flight at most. */
function heldDelivery() {
  const waiting: Array<() => void> = [];
  const state = { inFlight: 0, most: 0, delivered: [] as string[] };
  const delivery: CommandDelivery = {
    async deliver(entry: OutboxEntry): Promise<DeliveryOutcome> {
      state.inFlight++;
      state.most = Math.max(state.most, state.inFlight);
      await new Promise<void>((resolve) => waiting.push(resolve));
      state.inFlight--;
      state.delivered.push(entry.id);
      return { kind: 'delivered', events: [] };
    },
    async failureEvent() {
      throw new Error('not expected');
    },
  };
  return { delivery, state, releaseAll: () => waiting.splice(0).forEach((resolve) => resolve()) };
}

async function dispatcherOn(store: MemoryCommandStore, delivery: CommandDelivery, concurrency: number) {
  const log = new MemoryEventLog();
  await log.open();
  const dispatcher = new Dispatcher({
    outbox: store, aliases: store, log, deliveries: new Map([['orders', delivery]]),
    timeoutMs: 5_000, concurrency, retryScheduleMs: [50], drainMs: 100,
    // No look of its own at the outbox while a test runs (only those a test asks for).
    idleMs: 60_000,
    metrics: commandMetrics(new Registry()), logger: pino({ level: 'silent' }),
  });
  cleanups.push(() => dispatcher.close());
  return dispatcher;
}

describe('slots', () => {
  it('frees a slot once the backend answered, the next command sent while the first one\'s completion is written, up to as many writing as the concurrency', async () => {
    const store = new MemoryCommandStore();
    await store.open();
    const sent: string[] = [];
    const delivery: CommandDelivery = {
      async deliver(entry: OutboxEntry): Promise<DeliveryOutcome> {
        sent.push(entry.id);
        return { kind: 'delivered', events: [] };
      },
      async failureEvent() {
        throw new Error('not expected');
      },
    };
    // Every completion waits until the test lets it through (a slow commit).
    let letThrough!: () => void;
    const held = new Promise<void>((resolve) => (letThrough = resolve));
    const complete = store.complete.bind(store);
    store.complete = async (seq) => {
      await held;
      return complete(seq);
    };
    const dispatcher = await dispatcherOn(store, delivery, 1);
    // Before the dispatcher closes (cleanups run last first), even when an expectation failed.
    cleanups.push(async () => letThrough());
    await dispatcher.start();
    const committer = new GroupCommitter(store, dispatcher);
    const now = Date.now();
    for (const id of ['a', 'b', 'c']) {
      const answer = await committer.accept(record(id, { expiresMs: now + 60_000 }), { ...outboxEntry(id), nextAttemptMs: now }, now);
      // As the ingestion does for an entry written unclaimed (no slot at its accept).
      if ('seq' in answer && !answer.claimed) dispatcher.wake();
    }
    // One call at a time: b does not wait for a's completion; c waits, one completion being written is as many as the concurrency.
    await eventually(async () => sent.length === 2);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(sent).toEqual(['a', 'b']);
    expect(await store.depth()).toBe(3);
    letThrough();
    await eventually(async () => (await store.depth()) === 0);
    expect(sent).toEqual(['a', 'b', 'c']);
  });
});

describe('accept handoff', () => {
  it('takes commands claimed at accept from memory and delivers each once, without reading the outbox for them', async () => {
    const store = new MemoryCommandStore();
    await store.open();
    const backend = heldDelivery();
    const dispatcher = await dispatcherOn(store, backend.delivery, 4);
    let claims = 0;
    const claimDue = store.claimDue.bind(store);
    store.claimDue = (...args) => {
      claims++;
      return claimDue(...args);
    };
    await dispatcher.start();
    // Its first look at the (empty) outbox.
    await eventually(async () => claims === 1);
    const committer = new GroupCommitter(store, dispatcher);
    const now = Date.now();
    const answers = await Promise.all(['a', 'b', 'c'].map((id) => committer.accept(record(id, { expiresMs: now + 60_000 }), { ...outboxEntry(id), nextAttemptMs: now }, now)));
    expect(answers.map((answer) => 'seq' in answer && answer.claimed)).toEqual([true, true, true]);
    await eventually(async () => backend.state.inFlight === 3);
    backend.releaseAll();
    await eventually(async () => (await store.depth()) === 0);
    expect(backend.state.delivered.sort()).toEqual(['a', 'b', 'c']);
    expect(claims).toBe(1);
  });

  it('keeps a lane within its concurrency when a handover lands while its own claim is in flight', async () => {
    const store = new MemoryCommandStore();
    await store.open();
    for (const id of ['old-1', 'old-2']) await store.enqueue({ ...outboxEntry(id), nextAttemptMs: 0 });
    let releaseClaim!: () => void;
    const claimHeld = new Promise<void>((resolve) => (releaseClaim = resolve));
    const claimDue = store.claimDue.bind(store);
    let claiming = false;
    store.claimDue = async (...args) => {
      claiming = true;
      await claimHeld;
      return claimDue(...args);
    };
    const backend = heldDelivery();
    const dispatcher = await dispatcherOn(store, backend.delivery, 2);
    await dispatcher.start();
    await eventually(async () => claiming);
    // The dispatcher's claim of the two due entries is in flight: its slots are taken.
    expect(dispatcher.reserve('orders', 2)).toBe(0);
    releaseClaim();
    await eventually(async () => backend.state.inFlight === 2);
    expect(dispatcher.reserve('orders', 1)).toBe(0);
    backend.releaseAll();
    await eventually(async () => backend.state.delivered.length === 2);
    await eventually(async () => dispatcher.reserve('orders', 1) === 1);
    dispatcher.handOver('orders', [], 1, Date.now());
    expect(backend.state.most).toBe(2);
  });
});
