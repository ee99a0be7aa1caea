import { describe, expect, it } from 'vitest';
import { RedisSubscriptionStore } from '../../../src/bridges/webhooks/redis-subscription-store.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { subscription, subscriptionStoreContract } from './subscription-store-contract.ts';

/** The RedisSubscriptionStore under test on `prefix` (a fresh one by default); closing it also deletes its keys. */
function testStore(prefix = randomPrefix()): RedisSubscriptionStore {
  return deletingPrefixOnClose(new RedisSubscriptionStore({ url: SHARED_REDIS_URL, prefix }), prefix);
}

subscriptionStoreContract('redis', () => testStore());

describe('RedisSubscriptionStore', () => {
  it('shares subscriptions between two replicas on one prefix, and a disabled one leaves the fan-out list', async () => {
    const prefix = randomPrefix();
    const one = new RedisSubscriptionStore({ url: SHARED_REDIS_URL, prefix });
    const two = testStore(prefix);
    await one.open();
    await two.open();
    try {
      await one.create(subscription('s1', 'alice', { secret: 'x', types: ['OrderPlacedV1'] }));
      await one.create(subscription('s2', 'alice'));
      expect((await two.listActive()).map((s) => s.id)).toEqual(['s1', 's2']);
      expect(await two.setStatus('s1', 'disabled', { atMs: 1 })).toBe(true);
      expect((await one.listActive()).map((s) => s.id)).toEqual(['s2']);
      expect((await one.get('s1'))?.status).toBe('disabled');
      await expect(two.create(subscription('s2', 'bob'))).rejects.toThrow(/exists/);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
