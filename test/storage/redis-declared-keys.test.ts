/**
 * Issue 23, item 9: every Lua script of every Redis store declares every key it touches in `KEYS`.
 * Each store's contract suite, unchanged, with `checkDeclaredKeys` installed (a script that calls a
 * command on a key it did not declare fails with `undeclared key`, so its contract case fails),
 * plus a case showing the check refuses such a script.
 */
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisTaskStore } from '../../src/bridges/a2a/redis-task-store.ts';
import { RedisFollowStore } from '../../src/bridges/mcp/redis-follow-store.ts';
import { RedisDeliveryQueue } from '../../src/bridges/webhooks/redis-delivery-queue.ts';
import { RedisDeliveryRateLimit } from '../../src/bridges/webhooks/redis-delivery-rate-limit.ts';
import { RedisSubscriptionStore } from '../../src/bridges/webhooks/redis-subscription-store.ts';
import { RedisRateLimiter } from '../../src/commands/redis-rate-limit.ts';
import { RedisCommandStore } from '../../src/commands/redis-store.ts';
import { RedisIngestionLeases } from '../../src/ingest/redis-leases.ts';
import { RedisEventLog } from '../../src/log/redis.ts';
import { RedisRegistryStore } from '../../src/registry/redis-registry-store.ts';
import { taggedPrefix, type RedisStoreOptions } from '../../src/storage/redis.ts';
import { RedisScript } from '../../src/storage/redis-script.ts';
import { taskStoreContract } from '../bridges/a2a/task-store-contract.ts';
import { followStoreContract } from '../bridges/mcp/follow-store-contract.ts';
import { deliveryQueueContract } from '../bridges/webhooks/delivery-queue-contract.ts';
import { deliveryRateLimitContract } from '../bridges/webhooks/delivery-rate-limit-contract.ts';
import { subscriptionStoreContract } from '../bridges/webhooks/subscription-store-contract.ts';
import { commandStoreContract, idempotencyContract, outboxContract } from '../commands/store-contract.ts';
import { eventLogContract } from '../log/contract.ts';
import { registryStoreContract } from '../registry/store-contract.ts';
import { checkDeclaredKeys } from '../support/declared-keys.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';

checkDeclaredKeys();

const prefixes: string[] = [];
afterAll(async () => {
  for (const prefix of prefixes) await deletePrefix(SHARED_REDIS_URL, prefix);
});

/** A store's options on the shared Redis under a fresh tagged prefix (deleted after the file). */
function fresh(): RedisStoreOptions {
  const prefix = taggedPrefix(randomPrefix());
  prefixes.push(prefix);
  return { url: SHARED_REDIS_URL, prefix };
}

describe('the declared-keys check', () => {
  it('refuses a script that touches a key it did not declare, and runs one that declares it', async () => {
    const client = new Redis(SHARED_REDIS_URL);
    const { prefix } = fresh();
    try {
      const script = new RedisScript(`redis.call('SET', KEYS[1], '1')
redis.call('SET', KEYS[1] .. ':other', '1')
return 1`);
      await expect(script.run(client, [`${prefix}a`], [])).rejects.toThrow(/undeclared key/);
      const declared = new RedisScript(`redis.call('SET', KEYS[1], '1')
redis.call('SET', KEYS[2], '1')
return redis.call('TIME')[1] and 1`);
      expect(await declared.run(client, [`${prefix}a`, `${prefix}a:other`], [])).toBe(1);
    } finally {
      client.disconnect();
    }
  });
});

describe('the scripts outside the contract suites, under the check', () => {
  it('the command rate limit takes and refuses within its declared bucket', async () => {
    const limit = new RedisRateLimiter({ ...fresh(), perSecond: 0.001, burst: 1 });
    await limit.open();
    try {
      await limit.take('alice');
      await expect(limit.take('alice')).rejects.toMatchObject({ code: 'RATE_LIMITED' });
    } finally {
      await limit.close();
    }
  });

  it('the ingestion lease is held, refused to another holder and released within its declared key', async () => {
    const options = fresh();
    const [a, b] = [new RedisIngestionLeases(options), new RedisIngestionLeases(options)];
    await a.open();
    await b.open();
    try {
      expect(await a.hold('orders')).toBe(true);
      expect(await b.hold('orders')).toBe(false);
      await a.release('orders');
      expect(await b.hold('orders')).toBe(true);
    } finally {
      await a.close();
      await b.close();
    }
  });
});

eventLogContract('redis (declared keys)', () => new RedisEventLog(fresh()));
idempotencyContract('redis (declared keys)', () => new RedisCommandStore(fresh()));
outboxContract('redis (declared keys)', () => new RedisCommandStore(fresh()));
commandStoreContract('redis (declared keys)', () => new RedisCommandStore(fresh()));
registryStoreContract('redis (declared keys)', () => new RedisRegistryStore(fresh()));
subscriptionStoreContract('redis (declared keys)', () => new RedisSubscriptionStore(fresh()));
deliveryRateLimitContract('redis (declared keys)', () => new RedisDeliveryRateLimit(fresh()));
followStoreContract('redis (declared keys)', (limits) => new RedisFollowStore(fresh(), limits));
deliveryQueueContract('redis (declared keys)', () => new RedisDeliveryQueue(fresh()));
taskStoreContract('redis (declared keys)', (limits) => new RedisTaskStore(fresh(), limits));
