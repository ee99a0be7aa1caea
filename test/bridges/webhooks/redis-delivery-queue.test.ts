import { describe, expect, it } from 'vitest';
import { RedisDeliveryQueue } from '../../../src/bridges/webhooks/redis-delivery-queue.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { deliveryQueueContract, newDelivery } from './delivery-queue-contract.ts';

/** The queue under test; closing it also deletes its keys. */
class TestRedisDeliveryQueue extends RedisDeliveryQueue {
  readonly #prefix: string;
  constructor(prefix = randomPrefix()) {
    super({ url: SHARED_REDIS_URL, prefix });
    this.#prefix = prefix;
  }
  override async close(): Promise<void> {
    await super.close();
    await deletePrefix(SHARED_REDIS_URL, this.#prefix);
  }
}

deliveryQueueContract('redis', () => new TestRedisDeliveryQueue());

describe('RedisDeliveryQueue across replicas', () => {
  it('of two replicas beginning the same deliveries at once, exactly one gets each', async () => {
    const prefix = randomPrefix();
    const one = new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix });
    const two = new TestRedisDeliveryQueue(prefix);
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
