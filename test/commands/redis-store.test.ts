import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { RedisCommandStore } from '../../src/commands/redis-store.ts';
import { ProtoError } from '../../src/errors.ts';
import { deletePrefix, onRedisWithAof, PrivateRedis, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { commandStoreContract, idempotencyContract, outboxContract, outboxEntry, record } from './store-contract.ts';

/** After every fixture entry's due time (they are due in 2030). */
const LATER = Date.parse('2031-01-01T00:00:00Z');

/** The store under test; closing it also deletes its keys. */
class TestRedisCommandStore extends RedisCommandStore {
  readonly #url: string;
  readonly #prefix: string;
  constructor(url: string) {
    const prefix = randomPrefix();
    super({ url, prefix });
    this.#url = url;
    this.#prefix = prefix;
  }
  override async close(): Promise<void> {
    await super.close();
    await deletePrefix(this.#url, this.#prefix);
  }
}

const shared = () => new TestRedisCommandStore(SHARED_REDIS_URL);
idempotencyContract('redis', shared);
outboxContract('redis', shared);
commandStoreContract('redis', shared);

onRedisWithAof((aofServer) => {
  const aof = () => new TestRedisCommandStore(aofServer().url);

  it('keeps an accepted command across a kill -9 of Redis (what a 201 means with appendfsync always)', async () => {
    const server = aofServer();
    const prefix = randomPrefix();
    const store = new RedisCommandStore({ url: server.url, prefix });
    await store.open();
    try {
      const now = Date.now();
      expect(await store.accept(record('kept', { expiresMs: now + 60_000 }), outboxEntry('kept'), now)).toBeUndefined();
      await server.crash();
      await server.start();
      await expect.poll(() => store.ready(), { timeout: 20_000 }).toBe(true);
      expect(await store.find('kept', now)).toEqual(record('kept', { expiresMs: now + 60_000 }));
      expect((await store.due('orders', LATER, 10)).map((e) => e.id)).toEqual(['kept']);
    } finally {
      await store.close();
      await deletePrefix(server.url, prefix);
    }
  }, 60_000);
  idempotencyContract('redis (aof always)', aof);
  outboxContract('redis (aof always)', aof);
  commandStoreContract('redis (aof always)', aof);
});

describe('RedisCommandStore across replicas and outages', () => {
  it('two stores on one prefix (two replicas) enqueue one entry for one command id', async () => {
    const prefix = randomPrefix();
    const a = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix });
    const b = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix });
    await Promise.all([a.open(), b.open()]);
    try {
      const now = Date.now();
      const results = await Promise.all([a, b, a, b].map((store) => store.accept(record('x', { expiresMs: now + 60_000 }), outboxEntry('x'), now)));
      expect(results.filter((r) => r === undefined)).toHaveLength(1);
      expect(await a.depth()).toBe(1);
      expect((await b.due('orders', LATER, 10)).map((e) => e.id)).toEqual(['x']);
    } finally {
      await Promise.all([a.close(), b.close()]);
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  });

  it('refuses with STORE_UNAVAILABLE while Redis is down, reports not ready, and works again when it returns', async () => {
    const server = await PrivateRedis.start();
    const store = new RedisCommandStore({ url: server.url, prefix: randomPrefix() });
    try {
      await store.open();
      const now = Date.now();
      expect(store.ready()).toBe(true);
      expect(await store.accept(record('before', { expiresMs: now + 60_000 }), outboxEntry('before'), now)).toBeUndefined();
      await server.stop();
      await expect.poll(() => store.ready(), { timeout: 20_000 }).toBe(false);
      const refused = await store.accept(record('during', { expiresMs: now + 60_000 }), outboxEntry('during'), now).catch((err: unknown) => err);
      expect(refused).toBeInstanceOf(ProtoError);
      expect((refused as ProtoError).code).toBe('STORE_UNAVAILABLE');
      expect((refused as ProtoError).status).toBe(503);
      await server.start();
      await expect.poll(() => store.ready(), { timeout: 20_000 }).toBe(true);
      // No persistence on this server: the restart emptied it; the store works again without a reopen.
      expect(await store.accept(record('after', { expiresMs: now + 60_000 }), outboxEntry('after'), now)).toBeUndefined();
      expect((await store.due('orders', LATER, 10)).map((e) => e.id)).toEqual(['after']);
    } finally {
      await store.close();
      await server.dispose();
    }
  }, 60_000);

  it('with waitReplicas and no replica, refuses the accept with STORE_UNAVAILABLE, and its repeats too', async () => {
    const prefix = randomPrefix();
    const store = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix, waitReplicas: 1, waitTimeoutMs: 50 });
    await store.open();
    try {
      const now = Date.now();
      const refused = await store.accept(record('w', { expiresMs: now + 60_000 }), outboxEntry('w'), now).catch((err: unknown) => err);
      expect((refused as ProtoError).code).toBe('STORE_UNAVAILABLE');
      // The write may be on the primary; its retry finds it there and must not be answered 201 either.
      const retried = await store.accept(record('w', { expiresMs: now + 60_000 }), outboxEntry('w'), now).catch((err: unknown) => err);
      expect((retried as ProtoError).code).toBe('STORE_UNAVAILABLE');
      const [batched] = await store.acceptBatch([{ record: record('w', { expiresMs: now + 60_000 }), entry: outboxEntry('w') }], now).catch((err: unknown) => [err]);
      expect((batched as ProtoError).code).toBe('STORE_UNAVAILABLE');
      const claimed = await store.claim(record('w', { expiresMs: now + 60_000 }), now).catch((err: unknown) => err);
      expect((claimed as ProtoError).code).toBe('STORE_UNAVAILABLE');
    } finally {
      await store.close();
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  });
});

describe('RedisCommandStore waitAof', () => {
  it('is refused at open, with the reason, on a Redis older than 7.2 (and accepted on a newer one)', async () => {
    const probe = new Redis(SHARED_REDIS_URL);
    const [, major, minor] = /redis_version:(\d+)\.(\d+)/.exec(await probe.info('server'))!.map(Number);
    probe.disconnect();
    const store = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix: randomPrefix(), waitAof: true });
    if (major! > 7 || (major === 7 && minor! >= 2)) {
      await store.open();
      expect(store.ready()).toBe(true);
      await store.close();
    } else {
      await expect(store.open()).rejects.toThrow(/waitAof needs Redis >= 7\.2/);
      expect(store.ready()).toBe(false);
    }
  });
});

describe('RedisCommandStore waitReplicas with a replica', () => {
  it('answers an accept once WAIT confirmed it on the replica, and the replica holds the record', async () => {
    const primary = await PrivateRedis.start();
    const replica = await PrivateRedis.start(['--replicaof', '127.0.0.1', String(primary.port)]);
    const prefix = randomPrefix();
    const store = new RedisCommandStore({ url: primary.url, prefix, waitReplicas: 1, waitTimeoutMs: 15_000 });
    const onReplica = new RedisCommandStore({ url: replica.url, prefix });
    try {
      await store.open();
      await onReplica.open();
      const synced = new Redis(primary.url);
      // Online, not merely connected: a replica still in its first sync does not acknowledge WAIT.
      await expect.poll(async () => /slave0:.*state=online/.test(await synced.info('replication')), { timeout: 30_000 }).toBe(true);
      synced.disconnect();
      const now = Date.now();
      expect(await store.accept(record('r', { expiresMs: now + 60_000 }), outboxEntry('r'), now)).toBeUndefined();
      // WAIT returned: the replica already has the write, no polling needed.
      expect(await onReplica.find('r', now)).toEqual(record('r', { expiresMs: now + 60_000 }));
    } finally {
      await store.close();
      await onReplica.close();
      await replica.dispose();
      await primary.dispose();
    }
  }, 60_000);
});

describe('RedisCommandStore through Sentinel (storage.redis.sentinels, name)', () => {
  it('finds the master through the Sentinel and stores there', async () => {
    const master = await PrivateRedis.start();
    const sentinel = await PrivateRedis.sentinel(master, 'pgw-test');
    const prefix = randomPrefix();
    // The URL's host and port are not used with sentinels: the master comes from the Sentinel.
    const store = new RedisCommandStore({ url: 'redis://127.0.0.1:1/0', prefix, sentinels: [{ host: '127.0.0.1', port: sentinel.port }], name: 'pgw-test' });
    const direct = new RedisCommandStore({ url: master.url, prefix });
    try {
      await store.open();
      await direct.open();
      const now = Date.now();
      expect(await store.accept(record('s', { expiresMs: now + 60_000 }), outboxEntry('s'), now)).toBeUndefined();
      expect(await direct.find('s', now)).toEqual(record('s', { expiresMs: now + 60_000 }));
    } finally {
      await store.close();
      await direct.close();
      await sentinel.dispose();
      await master.dispose();
    }
  }, 60_000);
});

describe('RedisCommandStore leases in Redis\'s clock', () => {
  it('two replicas whose clocks are 60 s apart never claim one entry twice; the ahead one claims what is due', async () => {
    const prefix = randomPrefix();
    const rightClock = () => Date.now();
    const aheadClock = () => Date.now() + 60_000;
    const right = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix, clock: rightClock });
    const ahead = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix, clock: aheadClock });
    await right.open();
    await ahead.open();
    try {
      const due = (id: string) => ({ ...outboxEntry(id), nextAttemptMs: rightClock() });
      for (const id of ['a', 'b', 'c']) await right.enqueue(due(id));
      // The right replica claims everything with a 15 s lease; 60 s ahead, the other replica would
      // see that lease long run out, had it compared with its own clock.
      const claimedByRight = await right.claimDue('orders', rightClock(), 10, 15_000);
      expect(claimedByRight.map((e) => e.id)).toEqual(['a', 'b', 'c']);
      expect(await ahead.claimDue('orders', aheadClock(), 10, 15_000)).toEqual([]);
      // A command the ahead replica accepts (due "now" by its clock) is due for the right one at once,
      // and its claim by one hides it from the other.
      await ahead.enqueue({ ...outboxEntry('d'), nextAttemptMs: aheadClock() });
      const [first, second] = await Promise.all([right.claimDue('orders', rightClock(), 10, 15_000), ahead.claimDue('orders', aheadClock(), 10, 15_000)]);
      expect([...first, ...second].map((e) => e.id)).toEqual(['d']);
      // Times come back in each replica's own clock.
      expect(await ahead.nextDueMs()).toBeGreaterThan(aheadClock());
      expect(await right.nextDueMs()).toBeLessThan(aheadClock());
    } finally {
      await right.close();
      await ahead.close();
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  });
});
