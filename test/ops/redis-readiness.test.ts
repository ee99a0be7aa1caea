import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/gateway-config.ts';
import { RedisReadiness } from '../../src/storage/redis-readiness.ts';
import { tempDir } from '../support/gateway.ts';
import { PrivateRedis } from '../support/redis.ts';

describe('RedisReadiness (/readyz under storage.driver redis)', () => {
  it('is ready while Redis answers, not while it is down, and ready again when it returns', async () => {
    const server = await PrivateRedis.start();
    const config = await parseConfig(`storage:\n  driver: redis\n  url: ${server.url}\n  prefix: "t:"\n`, join(tempDir(), 'gateway.yaml'));
    const readiness = new RedisReadiness(config.storage);
    try {
      expect(readiness.ready()).toBe(false);
      await readiness.start();
      await readiness.start();
      expect(readiness.ready()).toBe(true);
      await server.stop();
      await expect.poll(() => readiness.ready(), { timeout: 20_000 }).toBe(false);
      await server.start();
      await expect.poll(() => readiness.ready(), { timeout: 20_000 }).toBe(true);
    } finally {
      await readiness.close();
      await readiness.close();
      await server.dispose();
    }
  }, 60_000);
});
