/**
 * The per-endpoint rate (`DeliveryRateLimit`) on Redis, shared by every replica on one prefix: key
 * `P whrate:{subscriptionId}` holds the time its next attempt may go, on Redis's own clock (`TIME`,
 * so replicas' clocks do not matter), expiring once it has passed (an idle subscription costs
 * nothing). One script reads and books atomically: of two replicas, only one gets a slot.
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import type { DeliveryRateLimit } from './DeliveryRateLimit.ts';

/** KEYS: the subscription's key. ARGV: interval, ms. Returns 0 when booked, else ms to wait. */
const RESERVE = new RedisScript(`
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local next = tonumber(redis.call('GET', KEYS[1]) or '0')
if next > now then return math.ceil(next - now) end
local interval = tonumber(ARGV[1])
redis.call('SET', KEYS[1], tostring(now + interval), 'PX', math.max(1, math.ceil(interval)))
return 0`);

const STORE = 'the webhook rate limit (Redis)';

/** Strict spacing by subscription in Redis. */
export class RedisDeliveryRateLimit implements DeliveryRateLimit {
  readonly #options: RedisStoreOptions;
  #client: Redis | undefined;

  constructor(options: RedisStoreOptions) {
    this.#options = options;
  }

  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  async reserve(subscriptionId: string, perSecond: number): Promise<number> {
    const client = this.#client;
    if (!client) throw new Error('RedisDeliveryRateLimit is not open');
    const key = `${this.#options.prefix}whrate:${subscriptionId}`;
    return Number(await whileRedisAnswers(STORE, () => RESERVE.run(client, [key], [String(1000 / perSecond)])));
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }
}
