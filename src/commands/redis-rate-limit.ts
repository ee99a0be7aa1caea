/**
 * The per-principal rate limit (`commands.rateLimit`) on Redis (`storage.driver: redis`): one token
 * bucket per principal, shared by every replica on the same Redis and prefix, so N replicas allow a
 * principal `perSecond`, not N times it. Key `P ratelimit:{principal}` is a hash `{tokens, at}`;
 * one script refills it by the time elapsed since `at` (Redis's own clock, so replicas' clocks do not
 * matter), takes a token when there is one, and sets the key to expire when the bucket would be full
 * again (a full bucket is the same as none: idle principals cost nothing).
 *
 * Redis unreachable: the limit fails closed with `503 STORE_UNAVAILABLE`, before the body is read.
 * The command store is on the same Redis, so the command could not have been accepted anyway.
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../storage/redis.ts';
import { whileRedisAnswers } from '../storage/redis-errors.ts';
import { RedisScript } from '../storage/redis-script.ts';
import { bucketCapacity, type PrincipalRateLimit, rateLimited, type RateLimitOptions } from './rate-limit.ts';

/** ARGV: capacity, tokens per ms. Returns {1 when a token was taken, tokens left}. */
const TAKE = new RedisScript(`
local capacity = tonumber(ARGV[1])
local perMs = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local bucket = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = capacity
if bucket[1] then tokens = math.min(capacity, tonumber(bucket[1]) + math.max(0, now - tonumber(bucket[2])) * perMs) end
local taken = 0
if tokens >= 1 then
  tokens = tokens - 1
  taken = 1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / perMs) + 1)
return {taken, tostring(tokens)}`);

const STORE = 'the rate limit (Redis)';

/** Token buckets by principal in Redis, shared by the replicas. */
export class RedisRateLimiter implements PrincipalRateLimit {
  readonly #options: RedisStoreOptions;
  #perMs: number;
  #capacity: number;
  #client: Redis | undefined;

  constructor(options: RedisStoreOptions & Pick<RateLimitOptions, 'perSecond' | 'burst'>) {
    this.#options = options;
    this.#perMs = options.perSecond / 1000;
    this.#capacity = bucketCapacity(options);
  }

  get enabled(): boolean {
    return this.#perMs > 0;
  }

  /** Takes new limits (a reload): each bucket refills at the new rate, up to the new capacity, from its next take. */
  reconfigure(options: Pick<RateLimitOptions, 'perSecond' | 'burst'>): void {
    this.#perMs = options.perSecond / 1000;
    this.#capacity = bucketCapacity(options);
  }

  /** Connects (fails when Redis does not answer); nothing to connect while the limit is off. Idempotent. */
  async open(): Promise<void> {
    if (this.#client || !this.enabled) return;
    this.#client = await connectStore(this.#options, 'commands');
  }

  async take(principal: string): Promise<void> {
    if (!this.enabled) return;
    // A reload may turn on a limit that was off at start: the connection opens with its first use.
    if (!this.#client) await this.open();
    const client = this.#client;
    if (!client) throw new Error('RedisRateLimiter is not open');
    const key = `${this.#options.prefix}ratelimit:${principal}`;
    const [taken, tokens] = (await whileRedisAnswers(STORE, () => TAKE.run(client, [key], [this.#capacity, this.#perMs]))) as [number, string];
    if (taken !== 1) throw rateLimited(Number(tokens), this.#perMs);
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }
}
