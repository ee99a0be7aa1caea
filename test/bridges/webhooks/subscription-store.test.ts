import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { CachedSubscriptionStore } from '../../../src/bridges/webhooks/cached-subscription-store.ts';
import { MemorySubscriptionStore } from '../../../src/bridges/webhooks/memory-subscription-store.ts';
import { SealedSubscriptionStore, SecretBox } from '../../../src/bridges/webhooks/secret-box.ts';
import { SqliteSubscriptionStore } from '../../../src/bridges/webhooks/sqlite-subscription-store.ts';
import { tempDir } from '../../support/gateway.ts';
import { subscription, subscriptionStoreContract } from './subscription-store-contract.ts';

subscriptionStoreContract('memory', () => new MemorySubscriptionStore());
subscriptionStoreContract('sqlite (file)', () => new SqliteSubscriptionStore(join(tempDir(), 'data', 'gateway.db')));
subscriptionStoreContract('sqlite (:memory:)', () => new SqliteSubscriptionStore(':memory:'));
subscriptionStoreContract('sealed (sqlite)', () => new SealedSubscriptionStore(new SqliteSubscriptionStore(':memory:'), new SecretBox(randomBytes(32))));
subscriptionStoreContract('cached (sealed, sqlite)', () => new CachedSubscriptionStore(new SealedSubscriptionStore(new SqliteSubscriptionStore(':memory:'), new SecretBox(randomBytes(32)))));

describe('SqliteSubscriptionStore', () => {
  it('keeps subscriptions across a reopen of the file', async () => {
    const path = join(tempDir(), 'gateway.db');
    const first = new SqliteSubscriptionStore(path);
    await first.open();
    await first.create(subscription('s1', 'alice', { secret: 'x', types: ['OrderPlacedV1'] }));
    await first.close();
    const second = new SqliteSubscriptionStore(path);
    await second.open();
    expect(await second.get('s1')).toEqual(subscription('s1', 'alice', { secret: 'x', types: ['OrderPlacedV1'] }));
    await second.close();
  });

  it('brings a table written before health and rotation up to date, keeping its rows', async () => {
    const path = join(tempDir(), 'gateway.db');
    const db = new DatabaseSync(path);
    db.exec(`CREATE TABLE webhook_subscriptions (id TEXT PRIMARY KEY, principal TEXT NOT NULL, service_id TEXT, url TEXT NOT NULL, secret TEXT,
      types TEXT, status TEXT NOT NULL, created_at TEXT NOT NULL, after_pos INTEGER NOT NULL, seq INTEGER NOT NULL)`);
    db.prepare('INSERT INTO webhook_subscriptions VALUES (?, ?, NULL, ?, ?, NULL, ?, ?, ?, 1)').run('old', 'alice', 'https://hooks.example.com/old', 'raw secret', 'active', '2030-01-01T00:00:00.000Z', 7);
    db.close();
    const store = new SqliteSubscriptionStore(path);
    await store.open();
    expect(await store.get('old')).toEqual(subscription('old', 'alice', { secret: 'raw secret' }));
    expect(await store.recordAttempt('old', false, 5)).toEqual({ failures: 1, sinceMs: 5 });
    expect(await store.rotateSecret('old', 'whsec_bmV3', 99)).toBe(true);
    expect(await store.get('old')).toMatchObject({ secret: 'whsec_bmV3', previousSecret: { secret: 'raw secret', untilMs: 99 } });
    await store.close();
  });
});

describe('CachedSubscriptionStore', () => {
  /** A memory store counting the reads that reach it. */
  function counted() {
    const inner = new MemorySubscriptionStore();
    const reads = { get: 0, listActive: 0 };
    const get = inner.get.bind(inner);
    const listActive = inner.listActive.bind(inner);
    inner.get = (id) => (reads.get++, get(id));
    inner.listActive = () => (reads.listActive++, listActive());
    return { inner, reads, cached: new CachedSubscriptionStore(inner) };
  }

  it('answers repeated reads without the store, with copies, until a write through it changes them', async () => {
    const { reads, cached } = counted();
    await cached.create(subscription('s1', 'alice', { secret: 'x' }));
    const first = await cached.get('s1');
    expect(await cached.get('s1')).toEqual(first);
    expect(await cached.listActive()).toEqual(await cached.listActive());
    expect(reads).toEqual({ get: 1, listActive: 1 });
    expect(await cached.recordAttempt('s1', false, 5)).toEqual({ failures: 1, sinceMs: 5 });
    expect((await cached.get('s1'))?.failing).toEqual({ failures: 1, sinceMs: 5 });
    expect(await cached.setStatus('s1', 'disabled', { atMs: 6, reason: 'failing' })).toBe(true);
    expect(await cached.listActive()).toEqual([]);
    expect((await cached.get('s1'))?.status).toBe('disabled');
    await cached.rotateSecret('s1', 'y', 100);
    expect((await cached.get('s1'))?.secret).toBe('y');
    expect(await cached.dropExpiredSecrets(200)).toBe(1);
    expect((await cached.get('s1'))?.previousSecret).toBeUndefined();
    await cached.delete('s1');
    expect(await cached.get('s1')).toBeUndefined();
    expect(reads).toEqual({ get: 6, listActive: 2 });
  });

  it('does not keep a read that was in flight while a write changed the subscription', async () => {
    const { inner, cached } = counted();
    await cached.create(subscription('s1', 'alice', { secret: 'x' }));
    const get = inner.get.bind(inner);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    inner.get = async (id) => {
      const found = await get(id);
      await held;
      return found;
    };
    const stale = cached.get('s1');
    await cached.rotateSecret('s1', 'y', 100);
    release();
    expect((await stale)?.secret).toBe('x');
    inner.get = get;
    expect((await cached.get('s1'))?.secret).toBe('y');
  });
});
