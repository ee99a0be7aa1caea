/**
 * The move to hash-tagged keys (issue 23, item 9): what a gateway wrote under `storage.prefix` as
 * it was (`pgw:…`) is found by a gateway that uses the tagged prefix (`{pgw}:…`), once, without
 * touching another gateway's keys on a longer prefix.
 */
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisCommandStore } from '../../src/commands/redis-store.ts';
import { RedisEventLog } from '../../src/log/redis.ts';
import { migrateToTaggedKeys } from '../../src/storage/redis-key-migration.ts';
import { taggedPrefix } from '../../src/storage/redis.ts';
import type { StorageConfig } from '../../src/config/types.ts';
import { cloudEvent } from '../log/fixtures/cloud-event.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';

afterEach(closeAll);

/** The storage configuration of a gateway on the shared Redis under `prefix`. */
function storage(prefix: string): StorageConfig {
  return { driver: 'redis', path: '', url: SHARED_REDIS_URL, prefix, redis: { waitReplicas: 0, waitTimeoutMs: 1_000, waitAof: false } };
}

/** What an older gateway left under `prefix` (untagged): three events and a correlation alias. */
async function olderGateway(prefix: string): Promise<void> {
  const log = new RedisEventLog({ url: SHARED_REDIS_URL, prefix });
  const commands = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix });
  await log.open();
  await commands.open();
  await log.append(['a', 'b', 'c'].map((id) => ({ backend: 'orders', event: cloudEvent(id) })));
  await commands.rememberAlias('cmd-1', 'own-1');
  await log.close();
  await commands.close();
}

describe('moving a gateway\'s Redis keys to the hash-tagged prefix', () => {
  it('renames the keys of every store once; the tagged stores find the data; another gateway on a longer prefix is untouched', async () => {
    const prefix = randomPrefix();
    const other = `${prefix}staging:`;
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    await olderGateway(prefix);
    await olderGateway(other);
    const raw = new Redis(SHARED_REDIS_URL);
    try {
      const before = await raw.keys(`${prefix}log:*`);
      expect(before.length).toBeGreaterThan(5);
      const moved = await migrateToTaggedKeys(storage(prefix));
      expect(moved).toBe((await raw.keys(`${taggedPrefix(prefix)}*`)).length - 1); // all but the marker
      expect(await raw.keys(`${prefix}log:*`)).toEqual([]);
      expect(await raw.keys(`${prefix}cmd:*`)).toEqual([]);
      // The other gateway's keys stay where they were.
      expect((await raw.keys(`${other}log:*`)).length).toBe(before.length);
      const log = new RedisEventLog({ url: SHARED_REDIS_URL, prefix: taggedPrefix(prefix) });
      const commands = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix: taggedPrefix(prefix) });
      await log.open();
      await commands.open();
      try {
        expect((await log.query({}, 0, 10)).events.map((e) => e.event.id)).toEqual(['a', 'b', 'c']);
        expect(await commands.aliasesOf('cmd-1')).toEqual(['own-1']);
        const [appended] = (await log.append([{ event: cloudEvent('d') }])).appended;
        expect(appended?.position).toBe(4);
      } finally {
        await log.close();
        await commands.close();
      }
      // Done once: a key written under the old prefix later is not moved again.
      await raw.set(`${prefix}log:late`, '1');
      expect(await migrateToTaggedKeys(storage(prefix))).toBe(0);
      expect(await raw.get(`${prefix}log:late`)).toBe('1');
    } finally {
      raw.disconnect();
    }
  });

  it('a gateway started on an older gateway\'s prefix serves its events', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    await olderGateway(prefix);
    const gw = await startTestGateway(gatewayYaml('', `storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }`));
    const { body } = await getJson(`${gw.url}events`);
    expect(body.events.map((e: { id: string }) => e.id)).toEqual(['a', 'b', 'c']);
  });
});
