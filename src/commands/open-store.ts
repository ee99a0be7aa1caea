/**
 * Chooses the command store of `storage.driver`: `sqlite` (the default: its own connection on the
 * event log's file), `memory`, or `redis` (shared by every replica on `storage.url` and `prefix`);
 * and where the rate limit's buckets live: in Redis under `redis` (shared), else in process memory.
 */
import type { Logger } from 'pino';
import type { CommandsConfig, StorageConfig } from '../config/types.ts';
import { redisStoreOptions } from '../storage/redis.ts';
import type { CommandStore } from './CommandStore.ts';
import { MemoryCommandStore } from './memory-store.ts';
import { type PrincipalRateLimit, RateLimiter } from './rate-limit.ts';
import { RedisRateLimiter } from './redis-rate-limit.ts';
import { RedisCommandStore } from './redis-store.ts';
import { SqliteCommandStore } from './sqlite-store.ts';

/** Creates and opens the configured command store; `logger` hears of the SQLite writer thread's deaths and restarts. */
export async function openCommandStore(storage: StorageConfig, logger?: Logger): Promise<CommandStore> {
  const store = storage.driver === 'redis' ? redisStore(storage) : storage.driver === 'memory' ? new MemoryCommandStore() : new SqliteCommandStore(storage.path, logger && {
    down: (err) => logger.error({ err }, 'the SQLite writer thread stopped; commands are refused with 503 until the next write restarts it'),
    up: () => logger.warn('the SQLite writer thread is up again; commands are accepted'),
    takenOver: (err) => logger.error({ err }, `another process opened ${storage.path} and writes it now; this gateway refuses commands with 503 and is not ready until that process stops (then it takes the file back within 20 s)`),
  });
  await store.open();
  return store;
}

function redisStore(storage: StorageConfig): RedisCommandStore {
  const { waitReplicas, waitTimeoutMs, waitAof } = storage.redis;
  return new RedisCommandStore({ ...redisStoreOptions(storage), waitReplicas, waitTimeoutMs, waitAof });
}

/** Creates and opens the rate limit of `commands.rateLimit`: shared by the replicas under `storage.driver: redis`. */
export async function openRateLimit(storage: StorageConfig, rateLimit: CommandsConfig['rateLimit']): Promise<PrincipalRateLimit> {
  if (storage.driver !== 'redis') return new RateLimiter(rateLimit);
  const limiter = new RedisRateLimiter({ ...redisStoreOptions(storage), ...rateLimit });
  await limiter.open();
  return limiter;
}
