/**
 * Vitest global setup: the tests bring their own Redis. When nothing answers at
 * `$PGW_TEST_REDIS_URL` (default redis://127.0.0.1:6379/0), a private `redis-server` is started on
 * a free loopback port for the run and stopped after it; the tests read its URL with
 * `inject('redisUrl')` (test/support/redis.ts, `SHARED_REDIS_URL`). Without `redis-server` installed
 * (several tests start servers of their own) the run stops at once with one line naming the package.
 */
import type { TestProject } from 'vitest/node';
import { findOrStartRedis, REDIS_SERVER_MISSING, redisServerInstalled, TEST_REDIS_URL_ENV } from './support/redis-server.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The Redis every test shares (each under a key prefix of its own). */
    redisUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  if (!redisServerInstalled()) {
    console.error(REDIS_SERVER_MISSING);
    process.exit(1);
  }
  const redis = await findOrStartRedis();
  if (redis.started) console.log(`tests: nothing answered at the configured Redis; started redis-server at ${redis.url} for this run`);
  process.env[TEST_REDIS_URL_ENV] = redis.url;
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}
