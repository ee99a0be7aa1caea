/**
 * The contract every `DeliveryQueue` passes (memory, sqlite, later redis): one vitest suite, run by
 * `delivery-queue.test.ts` with a factory of fresh, unopened, empty queues.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryQueue, NewDelivery } from '../../../src/bridges/webhooks/DeliveryQueue.ts';

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

    it('enqueues once per id and keeps the delivery as given, pending with no attempt', async () => {
      expect(await queue.enqueue([newDelivery('a'), newDelivery('b')], T)).toBe(2);
      expect(await queue.enqueue([newDelivery('a'), newDelivery('c')], T)).toBe(1);
      expect(await queue.due(T, 1, [])).toEqual([{ id: 'a', subscriptionId: 'sub-a', nextAttemptMs: T }]);
      const [a] = (await queue.list('sub-a', { after: 0, limit: 1 })).deliveries;
      expect(a).toMatchObject({ ...newDelivery('a'), status: 'pending', attempts: 0, createdMs: T, updatedMs: T });
      expect(a.seq).toBeGreaterThan(0);
      expect(await queue.counts()).toEqual({ pending: 3, 'in-flight': 0, succeeded: 0, dead: 0 });
    });

    it('gives due deliveries earliest first, within the limit, leaving out excluded subscriptions', async () => {
      await queue.enqueue([newDelivery('late', 'sub-a', T + 50), newDelivery('x', 'sub-b', T + 10), newDelivery('y', 'sub-a', T + 10), newDelivery('future', 'sub-a', T + 1000)], T);
      expect(ids(await queue.due(T + 100, 10, []))).toEqual(['x', 'y', 'late']);
      expect(ids(await queue.due(T + 100, 2, []))).toEqual(['x', 'y']);
      expect(ids(await queue.due(T + 100, 10, ['sub-a']))).toEqual(['x']);
      expect(ids(await queue.due(T, 10, []))).toEqual([]);
      expect(await queue.nextDueMs()).toBe(T + 10);
    });

    it('moves pending → in-flight once, counting the attempt; in-flight is not due', async () => {
      await queue.enqueue([newDelivery('a')], T);
      expect(await queue.begin('a', T + 1)).toMatchObject({ ...newDelivery('a'), status: 'in-flight', attempts: 1 });
      expect(await queue.begin('a', T + 1)).toBeUndefined();
      expect(await queue.begin('missing', T + 1)).toBeUndefined();
      expect(await queue.due(T + 5, 10, [])).toEqual([]);
      expect(await queue.nextDueMs()).toBeUndefined();
      const [a] = (await queue.list('sub-a', { after: 0, limit: 10 })).deliveries;
      expect(a).toMatchObject({ status: 'in-flight', attempts: 1, updatedMs: T + 1 });
    });

    it('records a failed attempt as pending with the next time, error and status, then success', async () => {
      await queue.enqueue([newDelivery('a')], T);
      await queue.begin('a', T);
      expect(await queue.finish('a', { status: 'pending', nextAttemptMs: T + 500, lastError: 'receiver answered 500', lastStatus: 500 }, T + 2)).toBe(true);
      expect(await queue.finish('a', { status: 'succeeded' }, T + 3)).toBe(false);
      expect(ids(await queue.due(T + 499, 10, []))).toEqual([]);
      expect((await queue.due(T + 500, 10, [])).map((d) => d.id)).toEqual(['a']);
      const [retry] = (await queue.list('sub-a', { after: 0, limit: 10 })).deliveries;
      expect(retry).toMatchObject({ status: 'pending', attempts: 1, nextAttemptMs: T + 500, lastError: 'receiver answered 500', lastStatus: 500 });
      await queue.begin('a', T + 500);
      await queue.finish('a', { status: 'succeeded', lastStatus: 204 }, T + 501);
      const [done] = (await queue.list('sub-a', { after: 0, limit: 10 })).deliveries;
      expect(done).toMatchObject({ status: 'succeeded', attempts: 2, lastStatus: 204 });
      expect(done.lastError).toBeUndefined();
    });

    it('does not count an attempt cut short by a stop', async () => {
      await queue.enqueue([newDelivery('a')], T);
      await queue.begin('a', T);
      await queue.finish('a', { status: 'pending', nextAttemptMs: T, uncount: true }, T + 1);
      expect((await queue.list('sub-a', { after: 0, limit: 10 })).deliveries[0]).toMatchObject({ status: 'pending', attempts: 0 });
      expect(ids(await queue.due(T, 10, []))).toEqual(['a']);
    });

    it('puts in-flight deliveries back to pending, due now (recovery after a stop)', async () => {
      await queue.enqueue([newDelivery('a', 'sub-a', T), newDelivery('b', 'sub-a', T)], T);
      await queue.begin('a', T);
      expect(await queue.requeueInFlight(T + 7)).toBe(1);
      expect(await queue.requeueInFlight(T + 8)).toBe(0);
      expect(ids(await queue.due(T + 7, 10, []))).toEqual(['b', 'a']);
      const [a] = (await queue.list('sub-a', { after: 0, limit: 1 })).deliveries;
      expect(a).toMatchObject({ status: 'pending', attempts: 1, nextAttemptMs: T + 7 });
    });

    it('redelivers a dead or succeeded delivery of its subscription: pending, due now, no attempt; leaves the rest alone', async () => {
      await queue.enqueue([newDelivery('dead'), newDelivery('done'), newDelivery('waiting'), newDelivery('busy')], T);
      for (const [id, status] of [['dead', 'dead'], ['done', 'succeeded']] as const) {
        await queue.begin(id, T);
        await queue.finish(id, { status, lastError: status === 'dead' ? 'receiver answered 410' : undefined, lastStatus: status === 'dead' ? 410 : 200 }, T + 1);
      }
      await queue.begin('busy', T);

      const dead = await queue.redeliver('sub-a', 'dead', T + 10);
      expect(dead).toMatchObject({ outcome: 'redelivered', delivery: { id: 'dead', status: 'pending', attempts: 0, nextAttemptMs: T + 10, updatedMs: T + 10, lastStatus: 410 } });
      expect(await queue.redeliver('sub-a', 'done', T + 10)).toMatchObject({ outcome: 'redelivered', delivery: { status: 'pending', attempts: 0 } });
      expect(await queue.redeliver('sub-a', 'waiting', T + 10)).toMatchObject({ outcome: 'busy', delivery: { status: 'pending' } });
      expect(await queue.redeliver('sub-a', 'busy', T + 10)).toMatchObject({ outcome: 'busy', delivery: { status: 'in-flight', attempts: 1 } });
      expect(await queue.redeliver('sub-b', 'dead', T + 10)).toEqual({ outcome: 'absent' });
      expect(await queue.redeliver('sub-a', 'missing', T + 10)).toEqual({ outcome: 'absent' });

      expect(ids(await queue.due(T + 10, 10, []))).toEqual(['waiting', 'dead', 'done']);
      expect(await queue.counts()).toEqual({ pending: 3, 'in-flight': 1, succeeded: 0, dead: 0 });
      expect(await queue.begin('dead', T + 11)).toMatchObject({ status: 'in-flight', attempts: 1 });
    });

    it('lists a subscription\'s deliveries in enqueue order, by status, in pages', async () => {
      await queue.enqueue(['a', 'b', 'c', 'd'].map((id) => newDelivery(id)), T);
      await queue.enqueue([newDelivery('other', 'sub-b')], T);
      for (const id of ['b', 'd']) {
        await queue.begin(id, T);
        await queue.finish(id, { status: 'dead', lastError: 'no answer' }, T);
      }
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
      await queue.enqueue([newDelivery('a'), newDelivery('b'), newDelivery('c'), newDelivery('x', 'sub-b')], T);
      await queue.begin('a', T);
      await queue.finish('a', { status: 'dead' }, T);
      await queue.begin('b', T);
      expect(await queue.cancelPending('sub-a')).toBe(1);
      expect(ids((await queue.list('sub-a', { after: 0, limit: 10 })).deliveries)).toEqual(['a', 'b']);
      expect(await queue.deleteSubscription('sub-a')).toBe(2);
      expect(await queue.finish('b', { status: 'succeeded' }, T)).toBe(false);
      expect(await queue.counts()).toEqual({ pending: 1, 'in-flight': 0, succeeded: 0, dead: 0 });
    });

    it('purges finished deliveries by age, and dead ones beyond the count, oldest first', async () => {
      await queue.enqueue(['s-old', 's-new', 'd1', 'd2', 'd3', 'p'].map((id) => newDelivery(id)), T);
      const end = async (id: string, status: 'succeeded' | 'dead', at: number) => {
        await queue.begin(id, at);
        await queue.finish(id, { status }, at);
      };
      await end('s-old', 'succeeded', T + 1);
      await end('s-new', 'succeeded', T + 100);
      await end('d1', 'dead', T + 2);
      await end('d2', 'dead', T + 3);
      await end('d3', 'dead', T + 4);
      expect(await queue.purge({ succeededBeforeMs: T + 50, deadBeforeMs: T + 3, maxDead: 1 })).toBe(3);
      expect(ids((await queue.list('sub-a', { after: 0, limit: 10 })).deliveries)).toEqual(['s-new', 'd3', 'p']);
    });
  });
}
