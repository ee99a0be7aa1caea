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

  it('push configs saved through one replica are posted to by another, and the per-principal bounds count both', async () => {
    const prefix = randomPrefix();
    const limits = { maxTasks: 10, ttlMs: 60_000, maxTasksPerPrincipal: 2, maxPushConfigsPerPrincipal: 2 };
    const one = new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits);
    const two = deletingPrefixOnClose(new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits), prefix);
    await one.open();
    await two.open();
    try {
      await one.save(task('t1'), caller('alice'));
      await two.save(task('t2'), caller('alice'));
      expect(await one.tasksOf(caller('alice'))).toBe(2);
      expect(await one.savePushConfig('t1', caller('alice'), 'c1', '{"id":"c1"}')).toBe('saved');
      expect(await two.pushConfigs('t1', caller('alice'))).toEqual(['{"id":"c1"}']);
      expect(await two.savePushConfig('t2', caller('alice'), 'c2', '{}')).toBe('saved');
      expect(await one.savePushConfig('t2', caller('alice'), 'c3', '{}')).toBe('principal-full');
      // A third task on replica two drops alice's oldest (t1), with its config.
      await two.save(task('t3'), caller('alice'));
      expect(await one.load('t1', caller('alice'))).toBeUndefined();
      expect(await one.pushConfigs('t1', caller('alice'))).toEqual([]);
      expect(await one.savePushConfig('t3', caller('alice'), 'c3', '{}')).toBe('saved');
    } finally {
      await one.close();
      await two.close();
    }
  });
});
