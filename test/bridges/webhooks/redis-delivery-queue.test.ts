import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisDeliveryQueue } from '../../../src/bridges/webhooks/redis-delivery-queue.ts';
import { deletingPrefixOnClose, onRedisWithAof, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { deliveryQueueContract, newDelivery } from './delivery-queue-contract.ts';

/** The RedisDeliveryQueue under test on `prefix` (a fresh one by default); closing it also deletes its keys. */
function testStore(prefix = randomPrefix()): RedisDeliveryQueue {
  return deletingPrefixOnClose(new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix }), prefix);
}

deliveryQueueContract('redis', () => testStore());

onRedisWithAof((server) => deliveryQueueContract('redis (appendfsync always)', () => new RedisDeliveryQueue({ url: server().url, prefix: randomPrefix() })));

describe('RedisDeliveryQueue across replicas', () => {
  it('of two replicas claiming at once, never both get one delivery, and together they hold at most 4 per subscription', async () => {
    const prefix = randomPrefix();
    const one = new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix });
    const two = testStore(prefix);
    await one.open();
    await two.open();
    try {
      const all = Array.from({ length: 40 }, (_, i) => newDelivery(`d${i}`, `sub-${i % 5}`, 1_000));
      expect(await one.enqueue(all, 1_000)).toBe(40);
      expect(await two.enqueue(all, 1_000)).toBe(0);
      const claims = await Promise.all([one.claim(2_000, 15, 60_000), two.claim(2_000, 15, 60_000), one.claim(2_000, 15, 60_000), two.claim(2_000, 15, 60_000)]);
      const claimed = claims.flat();
      expect(new Set(claimed.map((d) => d.id)).size).toBe(claimed.length);
      const perSubscription = Map.groupBy(claimed, (d) => d.subscriptionId);
      expect([...perSubscription.values()].map((list) => list.length)).toEqual([4, 4, 4, 4, 4]);
      expect((await one.counts())['in-flight']).toBe(20);
    } finally {
      await one.close();
      await two.close();
    }
  });
});

describe('RedisDeliveryQueue leases in Redis\'s clock', () => {
  it('two replicas whose clocks are 60 s apart never claim one delivery twice; each sees times in its own clock', async () => {
    const prefix = randomPrefix();
    const rightClock = () => Date.now();
    const aheadClock = () => Date.now() + 60_000;
    const right = new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix, clock: rightClock });
    const ahead = deletingPrefixOnClose(new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix, clock: aheadClock }), prefix);
    await right.open();
    await ahead.open();
    try {
      await right.enqueue(['a', 'b', 'c'].map((id) => newDelivery(id, 'sub-1', rightClock())), rightClock());
      // The right replica claims them with a 15 s lease; 60 s ahead, the other would see that lease
      // long run out, had it compared with its own clock.
      const claimedByRight = await right.claim(rightClock(), 10, 15_000);
      expect(claimedByRight.map((d) => d.id).sort()).toEqual(['a', 'b', 'c']);
      expect(await ahead.claim(aheadClock(), 10, 15_000)).toEqual([]);
      expect(await ahead.settle([], aheadClock(), 10, 15_000)).toEqual({ recorded: [], claimed: [] });
      // A delivery the ahead replica enqueues due "now" by its clock is due for the right one at once; one claim hides it from the other.
      await ahead.enqueue([newDelivery('d', 'sub-2', aheadClock())], aheadClock());
      const [first, second] = await Promise.all([right.claim(rightClock(), 10, 15_000), ahead.claim(aheadClock(), 10, 15_000)]);
      expect([...first, ...second].map((d) => d.id)).toEqual(['d']);
      // Lease ends come back in each replica's own clock.
      const [lease] = [...first, ...second];
      const mine = first.length > 0 ? rightClock : aheadClock;
      expect(lease!.leaseUntilMs).toBeGreaterThan(mine() + 10_000);
      expect(lease!.leaseUntilMs).toBeLessThanOrEqual(mine() + 15_000);
      expect(await ahead.nextDueMs()).toBeGreaterThan(aheadClock());
      expect(await right.nextDueMs()).toBeLessThan(aheadClock());
    } finally {
      await right.close();
      await ahead.close();
    }
  });
});

describe('RedisDeliveryQueue opening a queue written before leased claims', () => {
  it('moves its pending and in-flight deliveries into their subscriptions\' lanes: claimable at once, counted', async () => {
    const prefix = randomPrefix();
    const redis = new Redis(SHARED_REDIS_URL);
    const queue = testStore(prefix);
    try {
      const old = (id: string, sub: string, status: string, seq: number) =>
        redis.hset(`${prefix}dq:d:${id}`, { id, subscriptionId: sub, eventId: `evt-${id}`, eventType: 'OrderPlacedV1', payload: '{}', nextAttemptMs: 5, seq, status, attempts: status === 'in-flight' ? 1 : 0, createdMs: 1, updatedMs: 1 });
      await old('p1', 'sub-a', 'pending', 1);
      await old('f1', 'sub-b', 'in-flight', 2);
      await redis.zadd(`${prefix}dq:pending`, 5, `${String(1).padStart(16, '0')}|p1`);
      await redis.sadd(`${prefix}dq:inflight`, 'f1');
      await queue.open();
      expect(await queue.counts()).toEqual({ pending: 1, 'in-flight': 1, succeeded: 0, dead: 0 });
      expect((await queue.claim(10, 10, 1000)).map((d) => [d.id, d.attempts, d.reclaimed])).toEqual([['f1', 2, true], ['p1', 1, false]]);
      expect(await redis.exists(`${prefix}dq:pending`, `${prefix}dq:inflight`)).toBe(0);
    } finally {
      redis.disconnect();
      await queue.close();
    }
  });
});
