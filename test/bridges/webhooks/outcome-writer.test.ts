import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ClaimedDelivery, FinishedAttempt, Settlement } from '../../../src/bridges/webhooks/DeliveryQueue.ts';
import { MemoryDeliveryQueue } from '../../../src/bridges/webhooks/memory-delivery-queue.ts';
import { BATCH_SHARE, MAX_BATCH_WAIT_MS, MIN_BATCH, OutcomeWriter } from '../../../src/bridges/webhooks/outcome-writer.ts';
import { newDelivery } from './delivery-queue-contract.ts';

afterEach(() => {
  vi.useRealTimers();
});

/** A writer on a real memory queue holding `count` claimed deliveries, with `inFlight` attempts said to be in flight; records each write's outcome ids. */
async function harness(count: number, inFlight: number) {
  const queue = new MemoryDeliveryQueue();
  await queue.open();
  await queue.enqueue(Array.from({ length: count }, (_, i) => newDelivery(`d-${i}`, `sub-${i}`, 1)), 1);
  const claimed = await queue.claim(2, count, 60_000);
  const writes: string[][] = [];
  const settle = queue.settle.bind(queue);
  const spied = {
    settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement> {
      writes.push(attempts.map((a) => a.id));
      return settle(attempts, nowMs, limit, leaseMs);
    },
  };
  const refilled: ClaimedDelivery[] = [];
  const writer = new OutcomeWriter(spied, {
    leaseMs: 60_000,
    limit: () => 0,
    claimed: async (deliveries) => void refilled.push(...deliveries),
    inFlight: () => inFlight,
  });
  const record = (d: ClaimedDelivery) => writer.record({ id: d.id, claim: d.claim, outcome: { status: 'succeeded' } }, 3);
  return { queue, claimed, writes, record };
}

describe('OutcomeWriter batches', () => {
  it(`with ${1 / BATCH_SHARE} or more attempts in flight, writes the outcomes of ${BATCH_SHARE * 64} of 64 together without waiting for the timer`, async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const h = await harness(64, 64);
    const answers = h.claimed.slice(0, 8).map(h.record);
    expect(await Promise.all(answers)).toEqual(Array(8).fill(true));
    expect(h.writes).toEqual([h.claimed.slice(0, 8).map((d) => d.id)]);
  });

  it(`writes a lone outcome after ${MAX_BATCH_WAIT_MS} ms when the others do not end`, async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const h = await harness(64, 64);
    let answered = false;
    const answer = h.record(h.claimed[0]!).then((recorded) => (answered = recorded));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBe(false);
    expect(h.writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(MAX_BATCH_WAIT_MS);
    await answer;
    expect(answered).toBe(true);
    expect(h.writes).toEqual([[h.claimed[0]!.id]]);
  });

  it(`with ${MIN_BATCH} to ${1 / BATCH_SHARE - 1} attempts in flight, writes ${MIN_BATCH} outcomes together without waiting for the timer`, async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const h = await harness(MIN_BATCH, MIN_BATCH);
    expect(await Promise.all(h.claimed.map(h.record))).toEqual(Array(MIN_BATCH).fill(true));
    expect(h.writes).toEqual([h.claimed.map((d) => d.id)]);
  });

  it(`with a subscription's 4 attempts in flight, holds their outcomes up to ${MAX_BATCH_WAIT_MS} ms for all 4`, async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const h = await harness(4, 4);
    let answered = 0;
    const answers = h.claimed.slice(0, 3).map((d) => h.record(d).then(() => (answered += 1)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(h.writes).toEqual([]);
    await vi.advanceTimersByTimeAsync(MAX_BATCH_WAIT_MS);
    await Promise.all(answers);
    expect(answered).toBe(3);
    expect(h.writes).toEqual([h.claimed.slice(0, 3).map((d) => d.id)]);
  });

  it('with 2 attempts in flight, writes both outcomes together without waiting for the timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const h = await harness(2, 2);
    expect(await Promise.all(h.claimed.map(h.record))).toEqual([true, true]);
    expect(h.writes).toEqual([h.claimed.map((d) => d.id)]);
  });

  it('with one attempt in flight, writes its outcome in the next turn without waiting', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const h = await harness(4, 1);
    expect(await h.record(h.claimed[0]!)).toBe(true);
    expect(await h.record(h.claimed[1]!)).toBe(true);
    expect(h.writes).toEqual([[h.claimed[0]!.id], [h.claimed[1]!.id]]);
  });

  it('records every outcome once, in the order they ended, whatever the batches (none lost, none twice)', async () => {
    const h = await harness(300, 64);
    const order = [...h.claimed].sort(() => Math.random() - 0.5);
    const answers: Promise<boolean>[] = [];
    for (const [i, d] of order.entries()) {
      answers.push(h.record(d));
      if (i % 7 === 0) await new Promise((resolve) => setTimeout(resolve, Math.random() * 3));
      else if (i % 3 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    expect(await Promise.all(answers)).toEqual(Array(300).fill(true));
    expect(h.writes.flat()).toEqual(order.map((d) => d.id));
    expect(h.writes.some((w) => w.length > 1)).toBe(true);
    expect(await h.queue.counts()).toEqual({ pending: 0, 'in-flight': 0, succeeded: 300, dead: 0 });
  });
});
