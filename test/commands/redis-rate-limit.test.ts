import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { RedisRateLimiter } from '../../src/commands/redis-rate-limit.ts';
import { ProtoError } from '../../src/errors.ts';
import { closeAll, gatewayYaml, startTestGateway, track } from '../support/gateway.ts';
import { deletePrefix, PrivateRedis, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { FAST_DISPATCH, ordersBackend, placeOrder, post, scriptedBackend, sendJson } from './support.ts';

afterEach(closeAll);

/** A limiter of one replica on the shared Redis under `prefix` (closed after the test). */
async function limiter(prefix: string, perSecond: number, burst: number, url = SHARED_REDIS_URL): Promise<RedisRateLimiter> {
  const limit = new RedisRateLimiter({ url, prefix, perSecond, burst });
  await limit.open();
  return track(limit);
}

/** What `take` threw (undefined when it took a token). */
async function refusal(limit: RedisRateLimiter, principal: string): Promise<ProtoError | undefined> {
  try {
    await limit.take(principal);
    return undefined;
  } catch (err) {
    return err as ProtoError;
  }
}

describe('rate limit shared by the replicas (storage.driver redis)', () => {
  it('two replicas\' limiters take from one bucket per principal, and an idle bucket expires', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const [a, b] = [await limiter(prefix, 0.5, 2), await limiter(prefix, 0.5, 2)];
    expect(await refusal(a, 'alice')).toBeUndefined();
    expect(await refusal(b, 'alice')).toBeUndefined();
    for (const replica of [a, b]) {
      const refused = await refusal(replica, 'alice');
      expect(refused).toMatchObject({ code: 'RATE_LIMITED', status: 429, details: { retryAfterSeconds: 2 }, headers: { 'Retry-After': '2' } });
    }
    expect(await refusal(b, 'bob')).toBeUndefined();
    // The bucket's key lives until it would be full again (2 tokens at 0.5 a second: at most 4 s).
    const client = new Redis(SHARED_REDIS_URL);
    const ttl = await client.pttl(`${prefix}ratelimit:alice`);
    client.disconnect();
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(4_001);
  });

  it('refills at perSecond', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    // 2 a second with a bucket of one: spent at once, half a token back after 250 ms, a whole one after 500.
    const limit = await limiter(prefix, 2, 1);
    const client = new Redis(SHARED_REDIS_URL);
    const tokens = async () => Number(await client.hget(`${prefix}ratelimit:alice`, 'tokens'));
    try {
      expect(await refusal(limit, 'alice')).toBeUndefined();
      expect((await refusal(limit, 'alice'))?.code).toBe('RATE_LIMITED');
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect((await refusal(limit, 'alice'))?.code).toBe('RATE_LIMITED');
      // Refilled by the time elapsed: at least half a token (a slower rate has less; a faster one
      // would have given the token back, and the refusal just above would have been a take).
      expect(await tokens()).toBeGreaterThanOrEqual(0.45);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(await refusal(limit, 'alice')).toBeUndefined();
    } finally {
      client.disconnect();
    }
  });

  it('fails closed with 503 STORE_UNAVAILABLE while Redis is away, and limits again when it returns', async () => {
    const server = await PrivateRedis.start();
    track({ close: () => server.dispose() });
    const limit = await limiter(randomPrefix(), 0.5, 1, server.url);
    await server.stop();
    const refused = await refusal(limit, 'alice');
    expect(refused).toMatchObject({ code: 'STORE_UNAVAILABLE', status: 503 });
    await server.start();
    await expect.poll(async () => (await refusal(limit, 'alice'))?.code, { timeout: 20_000 }).toBeUndefined();
    expect((await refusal(limit, 'alice'))?.code).toBe('RATE_LIMITED');
  }, 60_000);

  it('two gateways on one Redis answer 429 once the principal spent its burst across both', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const backend = await scriptedBackend((_req, res) => sendJson(res, 201, {}));
    const yaml = gatewayYaml(
      `${FAST_DISPATCH.replace('commands: {', 'commands: { rateLimit: { perSecond: 0.5, burst: 2 },')}\nbackends:\n${ordersBackend(backend.url)}`,
      `storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }`,
    );
    const [first, second] = [await startTestGateway(yaml), await startTestGateway(yaml)];
    expect((await post(`${first.url}commands`, placeOrder())).status).toBe(201);
    expect((await post(`${second.url}commands`, placeOrder())).status).toBe(201);
    const limited = await post(`${second.url}commands`, placeOrder());
    expect(limited.status).toBe(429);
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(limited.headers.get('retry-after')).toBe('2');
  });
});
