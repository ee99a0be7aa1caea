import { Redis } from 'ioredis';
import { describe, expect, it, vi } from 'vitest';
import type { TaskStoreLimits } from '../../../src/bridges/a2a/open-task-store.ts';
import { RedisTaskStore } from '../../../src/bridges/a2a/redis-task-store.ts';
import { RedisScript } from '../../../src/storage/redis-script.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL, withReplicas } from '../../support/redis.ts';
import { caller, task, taskStoreContract } from './task-store-contract.ts';

taskStoreContract('redis', (limits) => {
  const prefix = randomPrefix();
  return deletingPrefixOnClose(new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits), prefix);
});

/** Two stores on one fresh prefix (two replicas), opened for `body` and closed after it; the prefix is deleted. */
async function twoReplicas(limits: TaskStoreLimits, body: (one: RedisTaskStore, two: RedisTaskStore) => Promise<void>): Promise<void> {
  const prefix = randomPrefix();
  const two = deletingPrefixOnClose(new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits), prefix);
  await withReplicas(new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, limits), two, body);
}

describe('RedisTaskStore across replicas', () => {
  it('a task saved by one replica is answered by another on the same prefix', async () => {
    await twoReplicas({ maxTasks: 10, ttlMs: 60_000 }, async (one, two) => {
      await one.save(task('t1'), caller('alice'));
      expect(await two.load('t1', caller('alice'))).toEqual(task('t1'));
      expect(await two.load('t1', caller('bob'))).toBeUndefined();
    });
  });

  it('push configs saved through one replica are posted to by another, and the per-principal bounds count both', async () => {
    await twoReplicas({ maxTasks: 10, ttlMs: 60_000, maxTasksPerPrincipal: 2, maxPushConfigsPerPrincipal: 2 }, async (one, two) => {
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
    });
  });

  it('a full store refuses new tasks atomically across replicas: of ten callers racing for the last room one gets it, nobody\'s task is evicted', async () => {
    await twoReplicas({ maxTasks: 2, ttlMs: 60_000 }, async (one, two) => {
      await one.save(task('b1'), caller('bob'));
      const racers = Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? one : two).save(task(`r${i}`), caller(`racer-${i}`)));
      const outcomes = await Promise.allSettled(racers);
      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      for (const o of outcomes) if (o.status === 'rejected') expect(o.reason).toMatchObject({ code: 'TASKS_EXHAUSTED' });
      expect(await two.load('b1', caller('bob'))).toBeDefined();
    });
  });

  it('tasks written without an owner (an older gateway) count toward maxTasks and are the first dropped to make room; owned keys not yet marked are not mistaken for them', async () => {
    const prefix = randomPrefix();
    const store = deletingPrefixOnClose(new RedisTaskStore({ url: SHARED_REDIS_URL, prefix }, { maxTasks: 2, ttlMs: 60_000 }), prefix);
    const redis = new Redis(SHARED_REDIS_URL);
    await store.open();
    try {
      await store.save(task('old'), caller('legacy'));
      await store.save(task('b1'), caller('bob'));
      // What an older gateway left: 'old' without an owner; 'b1' owned, but written before owned keys were marked.
      await redis.hdel(`${prefix}a2a:owner`, '\nlegacy\nold');
      await redis.del(`${prefix}a2a:owned:legacy`);
      await redis.zrem(`${prefix}a2a:claimed`, '\nlegacy\nold', '\nbob\nb1');
      // Full (the ownerless task counts): a new caller's task takes the ownerless one's place, not bob's.
      await store.save(task('m1'), caller('mallory'));
      expect(await store.load('old', caller('legacy'))).toBeUndefined();
      expect(await store.load('b1', caller('bob'))).toBeDefined();
      expect(await store.load('m1', caller('mallory'))).toBeDefined();
      // No ownerless task left: the next caller is refused, and bob's key is marked owned again.
      await expect(store.save(task('e1'), caller('eve'))).rejects.toMatchObject({ code: 'TASKS_EXHAUSTED' });
      expect(await redis.zscore(`${prefix}a2a:claimed`, '\nbob\nb1')).not.toBeNull();
      expect(await store.load('b1', caller('bob'))).toBeDefined();
    } finally {
      redis.disconnect();
      await store.close();
    }
  });

  it('a save whose tasks to forget change between its runs (another replica saved meanwhile) runs again and forgets the right ones', async () => {
    await twoReplicas({ maxTasks: 10, ttlMs: 60_000, maxTasksPerPrincipal: 2 }, async (one, two) => {
      await one.save(task('t1'), caller('alice'));
      await one.save(task('t2'), caller('alice'));
      // two (which saved nothing, so declares nothing more than its task) first hears that t1 must
      // go; before its second run, one saves t4 (forgetting t1 itself), so two's second run must
      // forget t2 instead, which it was not given: a third run.
      const run = RedisScript.prototype.run;
      let runs = 0;
      const spy = vi.spyOn(RedisScript.prototype, 'run').mockImplementation(async function (this: RedisScript, ...args) {
        runs += 1;
        if (runs === 2) await one.save(task('t4'), caller('alice'));
        return run.apply(this, args);
      });
      try {
        await two.save(task('t3'), caller('alice'));
      } finally {
        spy.mockRestore();
      }
      expect(await one.tasksOf(caller('alice'))).toBe(2);
      expect(await one.load('t2', caller('alice'))).toBeUndefined();
      expect(await one.load('t3', caller('alice'))).toBeDefined();
      expect(await one.load('t4', caller('alice'))).toBeDefined();
    });
  });

  it('a push-config save whose task another replica keeps re-owning under it ends in 503 STORE_UNAVAILABLE after a bounded number of runs, never a hang', async () => {
    await twoReplicas({ maxTasks: 10, ttlMs: 60_000 }, async (one) => {
      await one.save(task('t1'), caller('alice'));
      const other = new Redis(SHARED_REDIS_URL);
      const run = RedisScript.prototype.run;
      let runs = 0;
      const spy = vi.spyOn(RedisScript.prototype, 'run').mockImplementation(async function (this: RedisScript, client, keys, args) {
        // Another replica records a new owner for the task between this one's read and its script, every time.
        runs += 1;
        await other.hset(keys.find((key) => key.endsWith('a2a:owner'))!, '\nalice\nt1', `owner-${runs}`);
        return run.call(this, client, keys, args);
      });
      try {
        await expect(one.savePushConfig('t1', caller('alice'), 'c1', '{}')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
        expect(runs).toBeGreaterThan(1);
        expect(runs).toBeLessThanOrEqual(8);
      } finally {
        spy.mockRestore();
        other.disconnect();
      }
    });
  });

  it('a save names what the next one will likely forget, so a store at its bound saves in one run', async () => {
    await twoReplicas({ maxTasks: 10, ttlMs: 60_000, maxTasksPerPrincipal: 2 }, async (one) => {
      // t3 is the first save at the bound: it hears that t1 must go (two runs), and names t2 as next.
      for (const id of ['t1', 't2', 't3']) await one.save(task(id), caller('alice'));
      const spy = vi.spyOn(RedisScript.prototype, 'run');
      try {
        for (const id of ['t4', 't5']) await one.save(task(id), caller('alice'));
        expect(spy).toHaveBeenCalledTimes(2);
      } finally {
        spy.mockRestore();
      }
      expect(await one.load('t3', caller('alice'))).toBeUndefined();
      expect(await one.load('t4', caller('alice'))).toBeDefined();
      expect(await one.load('t5', caller('alice'))).toBeDefined();
    });
  });
});
