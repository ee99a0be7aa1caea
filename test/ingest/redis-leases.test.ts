import { afterEach, describe, expect, it } from 'vitest';
import { RedisIngestionLeases } from '../../src/ingest/redis-leases.ts';
import { eventually } from '../support/gateway.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function leases(prefix: string, ttlMs: number): Promise<RedisIngestionLeases> {
  const store = new RedisIngestionLeases({ url: SHARED_REDIS_URL, prefix, ttlMs });
  await store.open();
  cleanups.push(() => store.close());
  return store;
}

describe('RedisIngestionLeases', () => {
  it('gives a lease to one owner at a time; it renews; a dead owner\'s lease expires to another', async () => {
    const prefix = randomPrefix();
    cleanups.push(() => deletePrefix(SHARED_REDIS_URL, prefix));
    const a = await leases(prefix, 500);
    const b = await leases(prefix, 500);
    expect(await a.hold('ingest:payments')).toBe(true);
    expect(await b.hold('ingest:payments')).toBe(false);
    expect(await a.hold('ingest:payments')).toBe(true);
    expect(await b.hold('ingest:orders')).toBe(true);
    // a dies (stops renewing): b gets the lease once it expires, and a may not take it back.
    await a.close();
    await eventually(() => b.hold('ingest:payments'), 20_000, 50);
    const a2 = await leases(prefix, 500);
    expect(await a2.hold('ingest:payments')).toBe(false);
  });

  it('releases only its own lease', async () => {
    const prefix = randomPrefix();
    cleanups.push(() => deletePrefix(SHARED_REDIS_URL, prefix));
    const a = await leases(prefix, 60_000);
    const b = await leases(prefix, 60_000);
    expect(await a.hold('ingest:x')).toBe(true);
    await b.release('ingest:x');
    expect(await b.hold('ingest:x')).toBe(false);
    await a.release('ingest:x');
    expect(await b.hold('ingest:x')).toBe(true);
  });
});
