import { Redis } from 'ioredis';
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

describe('RedisEventLog time-only windows', () => {
  it('a log written before the time buckets existed is backfilled at open and answers time windows', async () => {
    const prefix = randomPrefix();
    const before = new RedisEventLog({ url: SHARED_REDIS_URL, prefix });
    await before.open();
    await before.append(Array.from({ length: 30 }, (_, i) => ({ event: cloudEvent(`old-${i}`, {}, i) })));
    await before.close();
    // What an older gateway left: the events and their time index, no buckets.
    const raw = new Redis(SHARED_REDIS_URL);
    await raw.del(`${prefix}log:tb:m`, `${prefix}log:tb:h`, `${prefix}log:tb:built`);
    raw.disconnect();
    const after = deletingPrefixOnClose(new RedisEventLog({ url: SHARED_REDIS_URL, prefix }), prefix);
    await after.open();
    try {
      const base = Date.parse(cloudEvent('x').time as string);
      const page = await after.query({ fromMs: base + 10 * 60_000, toMs: base + 12 * 60_000 }, 0, 10);
      expect(page.events.map((e) => e.event.id)).toEqual(['old-10', 'old-11', 'old-12']);
      const open = await after.query({ fromMs: base + 27 * 60_000 }, 0, 10);
      expect(open.events.map((e) => e.event.id)).toEqual(['old-27', 'old-28', 'old-29']);
    } finally {
      await after.close();
    }
  });

  it('pages a time window in log order across minute and hour buckets', async () => {
    const log = testLog(SHARED_REDIS_URL);
    await log.open();
    try {
      // Three hours of events, one every 5 minutes, appended out of time order in two halves.
      const events = Array.from({ length: 36 }, (_, i) => ({ event: cloudEvent(`t-${i}`, {}, i * 5) }));
      await log.append(events.slice(18));
      await log.append(events.slice(0, 18));
      const base = Date.parse(cloudEvent('x').time as string);
      const window = { fromMs: base + 7 * 60_000, toMs: base + 170 * 60_000 };
      const seen: string[] = [];
      let after = 0;
      for (;;) {
        const page = await log.query(window, after, 7);
        seen.push(...page.events.map((e) => e.event.id));
        if (page.next === undefined) break;
        after = page.next;
      }
      const inWindow = (i: number) => i * 5 >= 7 && i * 5 <= 170;
      const expected = [...events.slice(18), ...events.slice(0, 18)].map((e) => e.event.id).filter((id) => inWindow(Number(id.slice(2))));
      expect(seen).toEqual(expected);
    } finally {
      await log.close();
    }
  });

  it('pruning drops the time buckets the removed events leave empty, and the hour range follows what is left', async () => {
    const prefix = randomPrefix();
    const log = deletingPrefixOnClose(new RedisEventLog({ url: SHARED_REDIS_URL, prefix }), prefix);
    await log.open();
    const raw = new Redis(SHARED_REDIS_URL);
    try {
      // Three hours of events, one every 5 minutes: 36 minute buckets over three or four hours.
      const events = Array.from({ length: 36 }, (_, i) => ({ event: cloudEvent(`t-${i}`, {}, i * 5) }));
      await log.append(events);
      const hourOf = (i: number) => Math.floor(Date.parse(events[i]!.event.time as string) / 3_600_000);
      const hoursOf = (from: number) => new Set(events.slice(from).map((_, i) => hourOf(from + i)));
      expect(await raw.hlen(`${prefix}log:tb:m`)).toBe(2 * 36);
      expect(await log.prune({ maxEvents: 6, maxAgeMs: 0 })).toEqual({ removed: 30, heldBack: 0 });
      // Six minute buckets left (first and last each), the hours of the six events left, and the hour range.
      expect(await raw.hlen(`${prefix}log:tb:m`)).toBe(2 * 6);
      expect(await raw.hlen(`${prefix}log:tb:h`)).toBe(2 * hoursOf(30).size + 2);
      expect(await raw.hmget(`${prefix}log:tb:h`, 'min', 'max')).toEqual([String(hourOf(30)), String(hourOf(35))]);
      const base = Date.parse(cloudEvent('x').time as string);
      const page = await log.query({ fromMs: base - 60_000 }, 0, 100);
      expect(page.events.map((e) => e.event.id)).toEqual(events.slice(30).map((e) => e.event.id));
      // Everything pruned: no bucket and no hour range left; time windows find nothing.
      expect((await log.prune({ maxEvents: 0, maxAgeMs: 1 }, Date.now() + 60_000)).removed).toBe(6);
      expect(await raw.hlen(`${prefix}log:tb:m`)).toBe(0);
      expect(await raw.hlen(`${prefix}log:tb:h`)).toBe(0);
      expect((await log.query({ fromMs: base - 60_000 }, 0, 100)).events).toEqual([]);
      // Appends after that fill buckets again.
      await log.append([{ event: cloudEvent('late', {}, 7) }]);
      expect((await log.query({ fromMs: base, toMs: base + 10 * 60_000 }, 0, 100)).events.map((e) => e.event.id)).toEqual(['late']);
    } finally {
      raw.disconnect();
      await log.close();
    }
  });

  it('a log pruned before buckets were pruned with it loses its empty buckets at open', async () => {
    const prefix = randomPrefix();
    const before = new RedisEventLog({ url: SHARED_REDIS_URL, prefix });
    await before.open();
    await before.append(Array.from({ length: 10 }, (_, i) => ({ event: cloudEvent(`old-${i}`, {}, i) })));
    await before.prune({ maxEvents: 4, maxAgeMs: 0 });
    await before.close();
    // What an older gateway left: the buckets of the six pruned events, and no sweep marker.
    const raw = new Redis(SHARED_REDIS_URL);
    const minute = Math.floor(Date.parse(cloudEvent('x').time as string) / 60_000);
    for (let i = 0; i < 6; i++) await raw.hset(`${prefix}log:tb:m`, `f${minute + i}`, i + 1, `l${minute + i}`, i + 1);
    await raw.del(`${prefix}log:tb:swept`);
    const after = deletingPrefixOnClose(new RedisEventLog({ url: SHARED_REDIS_URL, prefix }), prefix);
    await after.open();
    try {
      expect((await raw.hkeys(`${prefix}log:tb:m`)).sort()).toEqual([6, 7, 8, 9].flatMap((i) => [`f${minute + i}`, `l${minute + i}`]).sort());
      expect(await raw.get(`${prefix}log:tb:swept`)).toBe('1');
    } finally {
      raw.disconnect();
      await after.close();
    }
  });
});
