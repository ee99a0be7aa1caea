import { describe, expect, it } from 'vitest';
import { RedisDeliveryQueue } from '../../../src/bridges/webhooks/redis-delivery-queue.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { deliveryQueueContract, newDelivery } from './delivery-queue-contract.ts';

/** The RedisDeliveryQueue under test on `prefix` (a fresh one by default); closing it also deletes its keys. */
function testStore(prefix = randomPrefix()): RedisDeliveryQueue {
  return deletingPrefixOnClose(new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix }), prefix);
}

deliveryQueueContract('redis', () => testStore());

describe('RedisDeliveryQueue across replicas', () => {
  it('of two replicas beginning the same deliveries at once, exactly one gets each', async () => {
    const prefix = randomPrefix();
    const one = new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix });
    const two = testStore(prefix);
    await one.open();
    await two.open();
    try {
      const ids = Array.from({ length: 20 }, (_, i) => `d${i}`);
      expect(await one.enqueue(ids.map((id) => newDelivery(id)), 1_000)).toBe(20);
      expect(await two.enqueue(ids.map((id) => newDelivery(id)), 1_000)).toBe(0);
      const begun = await Promise.all(ids.flatMap((id) => [one.begin(id, 2_000), two.begin(id, 2_000)]));
      const started = begun.filter((d) => d !== undefined).map((d) => d.id).sort();
      expect(started).toEqual([...ids].sort());
      expect((await one.counts())['in-flight']).toBe(20);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
