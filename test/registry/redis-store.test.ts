import { describe, expect, it } from 'vitest';
import { RedisRegistryStore } from '../../src/registry/redis-registry-store.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { registered, registryStoreContract } from './store-contract.ts';

/** The RedisRegistryStore under test on `prefix` (a fresh one by default); closing it also deletes its keys. */
function testStore(prefix = randomPrefix()): RedisRegistryStore {
  return deletingPrefixOnClose(new RedisRegistryStore({ url: SHARED_REDIS_URL, prefix }), prefix);
}

registryStoreContract('redis', () => testStore());

describe('RedisRegistryStore', () => {
  it('shares services and paused marks between two replicas on one prefix', async () => {
    const prefix = randomPrefix();
    const one = new RedisRegistryStore({ url: SHARED_REDIS_URL, prefix });
    const two = testStore(prefix);
    await one.open();
    await two.open();
    try {
      await one.put(registered('a', { endpoint: 'http://10.0.0.1/' }));
      await one.setPaused('a', true);
      expect(await two.list()).toEqual([registered('a', { endpoint: 'http://10.0.0.1/' })]);
      expect(await two.pausedIds()).toEqual(['a']);
    } finally {
      await one.close();
      await two.close();
    }
  });
});
