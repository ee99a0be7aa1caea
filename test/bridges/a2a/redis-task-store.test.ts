import { describe, expect, it } from 'vitest';
import { RedisTaskStore } from '../../../src/bridges/a2a/redis-task-store.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { caller, task, taskStoreContract } from './task-store-contract.ts';

taskStoreContract('redis', (limits) => {
  const prefix = randomPrefix();
  return deletingPrefixOnClose(new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits), prefix);
});

describe('RedisTaskStore across replicas', () => {
  it('a task saved by one replica is answered by another on the same prefix', async () => {
    const prefix = randomPrefix();
    const limits = { maxTasks: 10, ttlMs: 60_000 };
    const one = new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits);
    const two = deletingPrefixOnClose(new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits), prefix);
    await one.open();
    await two.open();
    try {
      await one.save(task('t1'), caller('alice'));
      expect(await two.load('t1', caller('alice'))).toEqual(task('t1'));
      expect(await two.load('t1', caller('bob'))).toBeUndefined();
    } finally {
      await one.close();
      await two.close();
    }
  });
});
