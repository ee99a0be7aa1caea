/**
 * `RegistryFollower` on a shared Redis registry store: a change notice makes it re-read at once,
 * and a lost notice (a change that bumps the version without one) is caught by the version check.
 */
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisRegistryStore } from '../../src/registry/redis-registry-store.ts';
import { RegistryFollower } from '../../src/registry/registry-follower.ts';
import { closeAll, eventually, track } from '../support/gateway.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { registered } from './store-contract.ts';

afterEach(closeAll);

/** Two stores on one fresh prefix (two replicas), and a follower on the second counting its re-reads. */
async function replicas() {
  const prefix = randomPrefix();
  const one = track(new RedisRegistryStore({ url: SHARED_REDIS_URL, prefix }));
  const two = track(deletingPrefixOnClose(new RedisRegistryStore({ url: SHARED_REDIS_URL, prefix }), prefix));
  await one.open();
  await two.open();
  const seen: string[][] = [];
  const follower = new RegistryFollower(two, { sync: async () => void seen.push((await two.list()).map((s) => s.id)) }, pino({ level: 'silent' }));
  track({ close: async () => follower.close() });
  await follower.start();
  await eventually(() => seen.length === 1);
  return { prefix, one, seen };
}

describe('RegistryFollower', () => {
  it('re-reads when another replica announces a change', async () => {
    const { one, seen } = await replicas();
    await one.put(registered('a'));
    await eventually(() => seen.at(-1)?.includes('a'));
    await one.setPaused('a', true);
    await eventually(() => seen.length >= 3);
  });

  it('re-reads after a change whose notice was lost (the version check)', async () => {
    const { prefix, seen } = await replicas();
    const raw = new Redis(SHARED_REDIS_URL);
    track({ close: async () => void raw.disconnect() });
    // What a replica does when its PUBLISH never arrives: the data and the version, no notice.
    await raw.hset(`${prefix}reg:services`, 'b', JSON.stringify(registered('b')));
    await raw.zadd(`${prefix}reg:order`, 1, 'b');
    await raw.incr(`${prefix}reg:version`);
    await eventually(() => seen.at(-1)?.includes('b'), 5_000);
  });
});
