/**
 * The contract every `DeliveryQueue` passes (memory, sqlite, redis): one vitest suite, run by
 * `delivery-queue.test.ts` and `redis-delivery-queue.test.ts` with a factory of fresh, unopened,
 * empty queues.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PER_SUBSCRIPTION, type DeliveryQueue, type NewDelivery } from '../../../src/bridges/webhooks/DeliveryQueue.ts';

const T = 1_000_000;

/** A delivery `id` of `subscriptionId`, due at `dueMs`. */
export function newDelivery(id: string, subscriptionId = 'sub-a', dueMs = T): NewDelivery {
  return { id, subscriptionId, eventId: `evt-${id}`, eventType: 'OrderPlacedV1', payload: `{"id":"evt-${id}"}`, nextAttemptMs: dueMs };
}

/** Defines the contract suite for the queue built by `make`. */
export function deliveryQueueContract(name: string, make: () => DeliveryQueue | Promise<DeliveryQueue>): void {
  describe(`DeliveryQueue contract: ${name}`, () => {
    let queue: DeliveryQueue;
    const ids = (list: Array<{ id: string }>) => list.map((d) => d.id);

    beforeEach(async () => {
      queue = await make();
      await queue.open();
      await queue.open();
    });

    afterEach(async () => {
      await queue.close();
      await queue.close();
    });

    /** Claims `limit` at `at` with a 1 s lease; returns the ids claimed. */
    const claimIds = async (at: number, limit = 10) => ids(await queue.claim(at, limit, 1000));
    /** Claims the one delivery due at `at` and ends it with `status`. */
    const end = async (at: number, status: 'succeeded' | 'dead') => {
      const [d] = await queue.claim(at, 1, 1000);
      expect(await queue.finish([{ id: d.id, claim: d.claim, outcome: { status } }], at)).toEqual([true]);
    };

    it('enqueues once per id and keeps the delivery as given, pending with no attempt', async () => {
      expect(await queue.enqueue([newDelivery('a'), newDelivery('b')], T)).toBe(2);
      expect(await queue.enqueue([newDelivery('a'), newDelivery('c')], T)).toBe(1);
      const [a] = (await queue.list('sub-a', { after: 0, limit: 1 })).deliveries;
      expect(a).toMatchObject({ ...newDelivery('a'), status: 'pending', attempts: 0, createdMs: T, updatedMs: T });
      expect(a.seq).toBeGreaterThan(0);
      expect(await queue.counts()).toEqual({ pending: 3, 'in-flight': 0, succeeded: 0, dead: 0 });
      expect(await queue.unfinished()).toBe(3);
      expect(await queue.nextDueMs()).toBe(T);
    });

    it('claims due deliveries subscription by subscription in due order, earliest first, within the limit', async () => {
      await queue.enqueue([newDelivery('late', 'sub-a', T + 50), newDelivery('x', 'sub-b', T + 10), newDelivery('y', 'sub-a', T + 10), newDelivery('future', 'sub-a', T + 1000)], T);
      expect(await queue.nextDueMs()).toBe(T + 10);
      expect(await claimIds(T)).toEqual([]);
      expect(await claimIds(T + 100, 2)).toEqual(['y', 'late']);
      expect(await claimIds(T + 100)).toEqual(['x']);
      expect(await queue.nextDueMs()).toBe(T + 1000);
    });

    it('claims with a lease: in flight, the attempt counted, a claim token, hidden from every other claim', async () => {
      await queue.enqueue([newDelivery('a')], T);
      const [a] = await queue.claim(T + 1, 10, 1000);
      expect(a).toMatchObject({ ...newDelivery('a'), status: 'in-flight', attempts: 1, leaseUntilMs: T + 1001, reclaimed: false });
      expect(typeof a.claim).toBe('number');
      expect(await claimIds(T + 5)).toEqual([]);
      expect(await claimIds(T + 1000)).toEqual([]);
      const [listed] = (await queue.list('sub-a', { after: 0, limit: 10 })).deliveries;
      expect(listed).toMatchObject({ status: 'in-flight', attempts: 1, updatedMs: T + 1 });
      expect(await queue.counts()).toEqual({ pending: 0, 'in-flight': 1, succeeded: 0, dead: 0 });
      expect(await queue.unfinished()).toBe(1);
      // Nothing due but the lease: its end is when the delivery may be claimed again.
      expect(await queue.nextDueMs()).toBe(T + 1001);
    });

    it('never gives one delivery to two concurrent claimers', async () => {
      const all = Array.from({ length: 12 }, (_, i) => newDelivery(`d${i}`, `sub-${i % 3}`));
      await queue.enqueue(all, T);
      const claims = await Promise.all([queue.claim(T, 7, 1000), queue.claim(T, 7, 1000), queue.claim(T, 7, 1000)]);
      const claimed = claims.flatMap(ids).sort();
      expect(claimed).toEqual(all.map((d) => d.id).sort());
    });

    it(`holds at most ${PER_SUBSCRIPTION} in flight per subscription across claimers; a finish frees a slot`, async () => {
      await queue.enqueue(Array.from({ length: 10 }, (_, i) => newDelivery(`a${i}`, 'sub-a')), T);
      await queue.enqueue([newDelivery('b0', 'sub-b', T + 1)], T);
      const first = await queue.claim(T + 1, 10, 1000);
      expect(ids(first)).toEqual(['a0', 'a1', 'a2', 'a3', 'b0']);
      // Another claimer (another replica on a shared store) gets nothing of sub-a while its 4 slots are held.
      expect(await claimIds(T + 2)).toEqual([]);
      expect(await queue.nextDueMs()).toBe(T + 1001);
      await queue.finish([{ id: 'a1', claim: first[1].claim, outcome: { status: 'succeeded' } }], T + 3);
      expect(await claimIds(T + 3)).toEqual(['a4']);
      expect(await claimIds(T + 3)).toEqual([]);
    });

    it('does not let a saturated subscription\'s backlog starve another subscription\'s due delivery', async () => {
      await queue.enqueue(Array.from({ length: 500 }, (_, i) => newDelivery(`slow-${i}`, 'slow', T)), T);
      await queue.enqueue([newDelivery('fast', 'fast', T + 5)], T);
      expect(await claimIds(T + 10, 4)).toEqual(['slow-0', 'slow-1', 'slow-2', 'slow-3']);
      expect(await claimIds(T + 10, 4)).toEqual(['fast']);
    });

    it('returns a delivery whose lease ran out: reclaimed under a new claim, the interrupted attempt counted; the stale claim is refused', async () => {
      await queue.enqueue([newDelivery('a'), newDelivery('b')], T);
      const [a, b] = await queue.claim(T, 10, 1000);
      expect(await claimIds(T + 999)).toEqual([]);
      const [again] = await queue.claim(T + 1000, 1, 5000);
      expect(again).toMatchObject({ id: 'a', status: 'in-flight', attempts: 2, reclaimed: true, leaseUntilMs: T + 6000 });
      expect(again.claim).not.toBe(a.claim);
      // The first claimer comes back late: its outcome and its release are refused, the new claimer's
      // kept. (b's lease ran out too, but no one took it over: its claim is still the current one.)
      expect(await queue.finish([{ id: 'a', claim: a.claim, outcome: { status: 'dead', lastError: 'late' } }], T + 1001)).toEqual([false]);
      expect(await queue.release([{ id: 'a', claim: a.claim }], T + 1001)).toBe(0);
      expect(await queue.finish([{ id: 'a', claim: again.claim, outcome: { status: 'succeeded', lastStatus: 204 } }, { id: 'b', claim: b.claim, outcome: { status: 'succeeded' } }], T + 1002))
        .toEqual([true, true]);
      const [listed] = (await queue.list('sub-a', { after: 0, limit: 1 })).deliveries;
      expect(listed).toMatchObject({ id: 'a', status: 'succeeded', attempts: 2, lastStatus: 204 });
      expect(listed.lastError).toBeUndefined();
    });

    it('records a failed attempt as pending with the next time, error and status, then success', async () => {
      await queue.enqueue([newDelivery('a')], T);
      const [first] = await queue.claim(T, 1, 1000);
      const failed = { status: 'pending', nextAttemptMs: T + 500, lastError: 'receiver answered 500', lastStatus: 500 } as const;
      expect(await queue.finish([{ id: 'a', claim: first.claim, outcome: failed }], T + 2)).toEqual([true]);
      expect(await queue.finish([{ id: 'a', claim: first.claim, outcome: { status: 'succeeded' } }], T + 3)).toEqual([false]);
      expect(await queue.nextDueMs()).toBe(T + 500);
      expect(await claimIds(T + 499)).toEqual([]);
      const [retry] = (await queue.list('sub-a', { after: 0, limit: 10 })).deliveries;
      expect(retry).toMatchObject({ status: 'pending', attempts: 1, nextAttemptMs: T + 500, lastError: 'receiver answered 500', lastStatus: 500 });
      const [second] = await queue.claim(T + 500, 1, 1000);
      expect(second).toMatchObject({ id: 'a', attempts: 2, reclaimed: false });
      await queue.finish([{ id: 'a', claim: second.claim, outcome: { status: 'succeeded', lastStatus: 204 } }], T + 501);
      const [done] = (await queue.list('sub-a', { after: 0, limit: 10 })).deliveries;
      expect(done).toMatchObject({ status: 'succeeded', attempts: 2, lastStatus: 204 });
      expect(done.lastError).toBeUndefined();
      expect(await queue.nextDueMs()).toBeUndefined();
    });

    it('records several outcomes in one finish, in order', async () => {
      await queue.enqueue([newDelivery('a'), newDelivery('b'), newDelivery('c', 'sub-b')], T);
      const claimed = await queue.claim(T, 10, 1000);
      const outcomes = [{ status: 'succeeded' }, { status: 'dead', lastError: 'no answer' }, { status: 'pending', nextAttemptMs: T + 9 }] as const;
      expect(await queue.finish(claimed.map((d, i) => ({ id: d.id, claim: d.claim, outcome: outcomes[i] })), T + 1)).toEqual([true, true, true]);
      expect(await queue.counts()).toEqual({ pending: 1, 'in-flight': 0, succeeded: 1, dead: 1 });
      expect(await queue.unfinished()).toBe(1);
      expect(await queue.finish([], T + 1)).toEqual([]);
    });

    it('settles in one write: records the outcomes, then claims the slots they freed', async () => {
      await queue.enqueue(Array.from({ length: 6 }, (_, i) => newDelivery(`a${i}`)), T);
      const [a0, a1] = await queue.claim(T, 10, 1000);
      const settled = await queue.settle([
        { id: 'a0', claim: a0.claim, outcome: { status: 'succeeded' } },
        { id: 'a1', claim: a1.claim + 1, outcome: { status: 'succeeded' } },
      ], T + 1, 10, 1000);
      // a0's slot is free again; a1's outcome named another claim, so a1 is still in flight.
      expect(settled.recorded).toEqual([true, false]);
      expect(ids(settled.claimed)).toEqual(['a4']);
      expect(settled.claimed[0]).toMatchObject({ status: 'in-flight', attempts: 1, leaseUntilMs: T + 1001 });
      expect(await queue.counts()).toEqual({ pending: 1, 'in-flight': 4, succeeded: 1, dead: 0 });
      expect(await queue.settle([], T + 2, 10, 1000)).toEqual({ recorded: [], claimed: [] });
    });

    it('releases claims unattempted: due at once, the attempt not counted', async () => {
      await queue.enqueue([newDelivery('a'), newDelivery('b')], T);
      const claimed = await queue.claim(T, 10, 60_000);
      expect(await queue.release(claimed, T + 1)).toBe(2);
      expect((await queue.list('sub-a', { after: 0, limit: 10 })).deliveries[0]).toMatchObject({ status: 'pending', attempts: 0, nextAttemptMs: T + 1 });
      expect(await claimIds(T + 1)).toEqual(['a', 'b']);
    });

    it('does not count an attempt that was not made (uncount)', async () => {
      await queue.enqueue([newDelivery('a')], T);
      const [a] = await queue.claim(T, 1, 1000);
      expect(await queue.finish([{ id: 'a', claim: a.claim, outcome: { status: 'dead', uncount: true } }], T + 1)).toEqual([true]);
      expect((await queue.list('sub-a', { after: 0, limit: 10 })).deliveries[0]).toMatchObject({ status: 'dead', attempts: 0 });
    });

    it('redelivers a dead or succeeded delivery of its subscription: pending, due now, no attempt; leaves the rest alone', async () => {
      await queue.enqueue([newDelivery('dead'), newDelivery('done'), newDelivery('busy'), newDelivery('waiting')], T);
      const [toDead, toDone] = await queue.claim(T, 3, 60_000);
      await queue.finish([
        { id: toDead.id, claim: toDead.claim, outcome: { status: 'dead', lastError: 'receiver answered 410', lastStatus: 410 } },
        { id: toDone.id, claim: toDone.claim, outcome: { status: 'succeeded', lastStatus: 200 } },
      ], T + 1);

      const dead = await queue.redeliver('sub-a', 'dead', T + 10);
      expect(dead).toMatchObject({ outcome: 'redelivered', delivery: { id: 'dead', status: 'pending', attempts: 0, nextAttemptMs: T + 10, updatedMs: T + 10, lastStatus: 410 } });
      expect(await queue.redeliver('sub-a', 'done', T + 10)).toMatchObject({ outcome: 'redelivered', delivery: { status: 'pending', attempts: 0 } });
      expect(await queue.redeliver('sub-a', 'waiting', T + 10)).toMatchObject({ outcome: 'busy', delivery: { status: 'pending' } });
      expect(await queue.redeliver('sub-a', 'busy', T + 10)).toMatchObject({ outcome: 'busy', delivery: { status: 'in-flight', attempts: 1 } });
      expect(await queue.redeliver('sub-b', 'dead', T + 10)).toEqual({ outcome: 'absent' });
      expect(await queue.redeliver('sub-a', 'missing', T + 10)).toEqual({ outcome: 'absent' });

      expect(await queue.counts()).toEqual({ pending: 3, 'in-flight': 1, succeeded: 0, dead: 0 });
      expect(await queue.nextDueMs()).toBe(T);
      const again = await queue.claim(T + 10, 10, 60_000);
      expect(ids(again)).toEqual(['waiting', 'dead', 'done']);
      expect(again[1]).toMatchObject({ status: 'in-flight', attempts: 1 });
    });

    it('gets one delivery of its subscription as it is now, in any status; another subscription\'s or an unknown id is undefined', async () => {
      await queue.enqueue([newDelivery('a', 'sub-a', T), newDelivery('b', 'sub-b', T)], T);
      expect(await queue.get('sub-a', 'a')).toMatchObject({ id: 'a', subscriptionId: 'sub-a', eventId: 'evt-a', payload: '{"id":"evt-a"}', status: 'pending', attempts: 0 });
      const [claimed] = await queue.claim(T, 1, 1000);
      expect(claimed!.id).toBe('a');
      expect(await queue.get('sub-a', 'a')).toMatchObject({ status: 'in-flight', attempts: 1 });
      await queue.finish([{ id: 'a', claim: claimed!.claim, outcome: { status: 'dead', lastError: 'HTTP 500', lastStatus: 500 } }], T + 1);
      expect(await queue.get('sub-a', 'a')).toMatchObject({ status: 'dead', attempts: 1, lastError: 'HTTP 500', lastStatus: 500 });
      expect(await queue.get('sub-b', 'a')).toBeUndefined();
      expect(await queue.get('sub-a', 'nope')).toBeUndefined();
    });

    it('lists a subscription\'s deliveries in enqueue order, by status, in pages', async () => {
      await queue.enqueue(['a', 'b', 'c', 'd'].map((id) => newDelivery(id)), T);
      await queue.enqueue([newDelivery('other', 'sub-b')], T);
      const [a, b, c, d] = await queue.claim(T, 4, 1000);
      await queue.finish([b, d].map((x) => ({ id: x.id, claim: x.claim, outcome: { status: 'dead', lastError: 'no answer' } })), T);
      await queue.release([a, c], T);
      const first = await queue.list('sub-a', { after: 0, limit: 3 });
      expect(ids(first.deliveries)).toEqual(['a', 'b', 'c']);
      expect(first.next).toBe(first.deliveries[2].seq);
      const rest = await queue.list('sub-a', { after: first.next!, limit: 3 });
      expect(ids(rest.deliveries)).toEqual(['d']);
      expect(rest.next).toBeUndefined();
      expect(ids((await queue.list('sub-a', { status: 'dead', after: 0, limit: 10 })).deliveries)).toEqual(['b', 'd']);
      expect(ids((await queue.list('sub-a', { status: 'pending', after: 0, limit: 10 })).deliveries)).toEqual(['a', 'c']);
    });

    it('cancels a subscription\'s pending deliveries, or deletes all of them', async () => {
      await queue.enqueue([newDelivery('a'), newDelivery('b'), newDelivery('c')], T);
      await queue.enqueue([newDelivery('x', 'sub-b', T + 5)], T);
      const [a, b] = await queue.claim(T, 2, 1000);
      await queue.finish([{ id: a.id, claim: a.claim, outcome: { status: 'dead' } }], T);
      expect(await queue.cancelPending('sub-a')).toBe(1);
      expect(ids((await queue.list('sub-a', { after: 0, limit: 10 })).deliveries)).toEqual(['a', 'b']);
      expect(await queue.deleteSubscription('sub-a')).toBe(2);
      expect(await queue.finish([{ id: b.id, claim: b.claim, outcome: { status: 'succeeded' } }], T)).toEqual([false]);
      expect(await queue.counts()).toEqual({ pending: 1, 'in-flight': 0, succeeded: 0, dead: 0 });
      expect(await queue.nextDueMs()).toBe(T + 5);
    });

    it('purges finished deliveries by age, and dead ones beyond the count, oldest first', async () => {
      await queue.enqueue(['s-old', 's-new', 'd1', 'd2', 'd3', 'p'].map((id) => newDelivery(id)), T);
      await end(T + 1, 'succeeded');
      await end(T + 100, 'succeeded');
      await end(T + 2, 'dead');
      await end(T + 3, 'dead');
      await end(T + 4, 'dead');
      expect(await queue.purge({ succeededBeforeMs: T + 50, deadBeforeMs: T + 3, maxDead: 1 })).toBe(3);
      expect(ids((await queue.list('sub-a', { after: 0, limit: 10 })).deliveries)).toEqual(['s-new', 'd3', 'p']);
    });
  });
}
