import { describe, expect, it } from 'vitest';
import { RedisRegistryStore } from '../../src/registry/redis-registry-store.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { registered, registryStoreContract } from './store-contract.ts';

/** The store under test; closing it also deletes its keys. */
class TestRedisRegistryStore extends RedisRegistryStore {
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

registryStoreContract('redis', () => new TestRedisRegistryStore());

describe('RedisRegistryStore', () => {
  it('shares services and paused marks between two replicas on one prefix', async () => {
    const prefix = randomPrefix();
    const one = new RedisRegistryStore({ url: SHARED_REDIS_URL, prefix });
    const two = new TestRedisRegistryStore(prefix);
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
