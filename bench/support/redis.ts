/**
 * Redis upkeep of the benchmarks: the Redis they share (found or brought along, as for the tests),
 * and each run works under a prefix of its own and removes it after.
 */
import { Redis } from 'ioredis';
import { findOrStartRedis, REDIS_SERVER_MISSING, redisServerInstalled, type RunRedis } from '../../test/support/redis-server.ts';

/**
 * The Redis the benchmarks share: the one at `$PGW_TEST_REDIS_URL` (default
 * redis://127.0.0.1:6379/0) when it answers, otherwise a `redis-server` started here on a free
 * loopback port (stopped by `stop()`, or when the process ends after `stopAtExit()`). Without
 * `redis-server` installed the process stops at once with one line naming the Debian package.
 */
export async function benchRedis(): Promise<RunRedis> {
  if (!redisServerInstalled()) {
    console.error(REDIS_SERVER_MISSING);
    process.exit(1);
  }
  const redis = await findOrStartRedis();
  if (redis.started) console.log(`bench: nothing answered at the configured Redis; started redis-server at ${redis.url}`);
  return redis;
}

/** The shared benchmark Redis's URL, for a benchmark script: a server started here stops when the script ends. */
export async function benchRedisUrl(): Promise<string> {
  const redis = await benchRedis();
  redis.stopAtExit();
  return redis.url;
}

/** Deletes every key under `prefix` on the Redis at `url`. */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const client = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}
