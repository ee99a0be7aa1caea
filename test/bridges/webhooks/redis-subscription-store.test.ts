import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import { RedisSubscriptionStore } from '../../../src/bridges/webhooks/redis-subscription-store.ts';
import { RedisScript } from '../../../src/storage/redis-script.ts';
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

  it('a delete that another replica keeps changing under it ends in 503 STORE_UNAVAILABLE after a bounded number of runs, never a hang', async () => {
    const prefix = randomPrefix();
    const store = testStore(prefix);
    await store.open();
    await store.create(subscription('s1', 'alice'));
    const other = new Redis(SHARED_REDIS_URL);
    const run = RedisScript.prototype.run;
    let runs = 0;
    const spy = vi.spyOn(RedisScript.prototype, 'run').mockImplementation(async function (this: RedisScript, client, keys, args) {
      // Another replica rewrites the subscription between this one's read and its script, every time.
      runs += 1;
      await other.hset(`${prefix}sub:all`, 's1', JSON.stringify({ ...subscription('s1', 'alice'), url: `https://changed-${runs}.example/` }));
      return run.call(this, client, keys, args);
    });
    try {
      await expect(store.delete('s1')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      expect(runs).toBeGreaterThan(1);
      expect(runs).toBeLessThanOrEqual(8);
    } finally {
      spy.mockRestore();
      other.disconnect();
      await store.close();
    }
  });
});
