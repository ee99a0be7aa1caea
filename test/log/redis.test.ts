import { describe, expect, it } from 'vitest';
import { RedisEventLog } from '../../src/log/redis.ts';
import type { StoredEvent } from '../../src/log/EventLog.ts';
import { deletePrefix, deletingPrefixOnClose, onRedisWithAof, PrivateRedis, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { eventLogContract } from './contract.ts';
import { cloudEvent } from './fixtures/cloud-event.ts';

/** A log under a fresh prefix on the Redis at `url`; closing it also deletes its keys. */
function testLog(url: string): RedisEventLog {
  const prefix = randomPrefix();
  return deletingPrefixOnClose(new RedisEventLog({ url, prefix }), prefix, url);
}

eventLogContract('redis', () => testLog(SHARED_REDIS_URL));

onRedisWithAof((server) => eventLogContract('redis (appendfsync always)', () => testLog(server().url)));

/** Resolves once `check` holds, polling. */
async function until(check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('RedisEventLog across replicas (two stores on one prefix)', () => {
  it('delivers every append of either store to both, in log order, each once', async () => {
    const prefix = randomPrefix();
    const a = new RedisEventLog({ url: SHARED_REDIS_URL, prefix });
    const b = new RedisEventLog({ url: SHARED_REDIS_URL, prefix });
    await a.open();
    await b.open();
    try {
      const seenA: number[] = [];
      const seenB: number[] = [];
      a.subscribe((events) => seenA.push(...events.map((e) => e.position)));
      b.subscribe((events) => seenB.push(...events.map((e) => e.position)));
      const writes: Promise<unknown>[] = [];
      for (let i = 0; i < 40; i++) writes.push((i % 2 ? a : b).append([{ event: cloudEvent(`x-${i}`) }, { event: cloudEvent(`y-${i}`) }]));
      await Promise.all(writes);
      const expected = Array.from({ length: 80 }, (_, i) => i + 1);
      await until(() => seenA.length >= 80 && seenB.length >= 80);
      expect(seenA).toEqual(expected);
      expect(seenB).toEqual(expected);
      expect(await a.count()).toBe(80);
      // The same ids again through the other store: duplicates, nothing delivered.
      expect((await b.append([{ event: cloudEvent('x-1') }])).duplicates).toBe(1);
    } finally {
      await a.close();
      await b.close();
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  });

  it('fills from the log what a trimmed tail no longer holds, without gap or repeat', async () => {
    const prefix = randomPrefix();
    const writer = new RedisEventLog({ url: SHARED_REDIS_URL, prefix, tailMaxLen: 1 });
    const reader = new RedisEventLog({ url: SHARED_REDIS_URL, prefix, tailMaxLen: 1 });
    await writer.open();
    await reader.open();
    try {
      const seen: StoredEvent[] = [];
      reader.subscribe((events) => seen.push(...events));
      for (let i = 0; i < 300; i++) await writer.append([{ event: cloudEvent(`t-${i}`) }]);
      await until(() => seen.length >= 300);
      expect(seen.map((e) => e.event.id)).toEqual(Array.from({ length: 300 }, (_, i) => `t-${i}`));
    } finally {
      await writer.close();
      await reader.close();
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  });

  it('resumes after Redis restarts, delivering what was appended meanwhile', async () => {
    const server = await PrivateRedis.start(['--appendonly', 'yes', '--appendfsync', 'always']);
    const a = new RedisEventLog({ url: server.url, prefix: 'r:' });
    const b = new RedisEventLog({ url: server.url, prefix: 'r:' });
    try {
      await a.open();
      await b.open();
      const seen: string[] = [];
      b.subscribe((events) => seen.push(...events.map((e) => e.event.id)));
      await a.append([{ event: cloudEvent('before') }]);
      await until(() => seen.length === 1);
      await server.stop();
      await expect(a.append([{ event: cloudEvent('down') }])).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
      await server.start();
      // The command connection reconnects by itself.
      for (;;) {
        try {
          await a.append([{ event: cloudEvent('after') }]);
          break;
        } catch {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
      }
      await until(() => seen.length === 2);
      expect(seen).toEqual(['before', 'after']);
    } finally {
      await a.close();
      await b.close();
      await server.dispose();
    }
  }, 60_000);
});

describe('RedisEventLog appends of any size', () => {
  it('appends 10,000 events in one batch with their checkpoint, and another replica receives all of them in order', async () => {
    const prefix = randomPrefix();
    const writer = new RedisEventLog({ url: SHARED_REDIS_URL, prefix });
    const reader = deletingPrefixOnClose(new RedisEventLog({ url: SHARED_REDIS_URL, prefix }), prefix);
    await writer.open();
    await reader.open();
    try {
      const seen: number[] = [];
      reader.subscribe((events) => seen.push(...events.map((e) => e.position)));
      const batch = Array.from({ length: 10_000 }, (_, i) => ({ backend: 'big', event: cloudEvent(`big-${i}`) }));
      const result = await writer.append(batch, { key: 'big', value: 'cursor-10000' });
      expect(result.appended).toHaveLength(10_000);
      expect(await writer.count()).toBe(10_000);
      expect(await writer.checkpoint('big')).toBe('cursor-10000');
      await until(() => seen.length >= 10_000, 60_000);
      expect(seen).toEqual(Array.from({ length: 10_000 }, (_, i) => i + 1));
      // Nothing half-written: a repeat of the batch is all duplicates.
      expect((await writer.append(batch)).duplicates).toBe(10_000);
    } finally {
      await writer.close();
      await reader.close();
    }
  }, 120_000);
});
