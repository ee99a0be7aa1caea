/**
 * The registry store on Redis (`storage.driver: redis`), shared by every replica on one prefix:
 * `P reg:services` hash id → service JSON, `P reg:order` sorted set id by registration number (an
 * upsert keeps its place, as in the other stores), `P reg:seq` the counter, `P reg:paused` set of
 * paused ids. A put and a delete are each one Lua script (atomic).
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../storage/redis.ts';
import { whileRedisAnswers } from '../storage/redis-errors.ts';
import { RedisScript } from '../storage/redis-script.ts';
import type { RegisteredService, RegistryStore } from './RegistryStore.ts';

/** Where the store connects. */
export type RedisRegistryStoreOptions = RedisStoreOptions;

const PUT = new RedisScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[1])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])`);

const DELETE = new RedisScript(`
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return redis.call('HDEL', KEYS[1], ARGV[1])`);

const STORE = 'the registry store (Redis)';

/** A `RegistryStore` on Redis. */
export class RedisRegistryStore implements RegistryStore {
  readonly #options: RedisRegistryStoreOptions;
  readonly #services: string;
  readonly #order: string;
  readonly #seq: string;
  readonly #paused: string;
  #client: Redis | undefined;

  constructor(options: RedisRegistryStoreOptions) {
    this.#options = options;
    this.#services = `${options.prefix}reg:services`;
    this.#order = `${options.prefix}reg:order`;
    this.#seq = `${options.prefix}reg:seq`;
    this.#paused = `${options.prefix}reg:paused`;
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  async list(): Promise<RegisteredService[]> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, async () => {
      const ids = await client.zrange(this.#order, '0', '-1');
      if (ids.length === 0) return [];
      const rows = await client.hmget(this.#services, ...ids);
      return rows.filter((row): row is string => row !== null).map((row) => JSON.parse(row) as RegisteredService);
    });
  }

  async put(service: RegisteredService): Promise<void> {
    const client = this.#connected();
    await whileRedisAnswers(STORE, () => PUT.run(client, [this.#services, this.#order, this.#seq], [service.id, JSON.stringify(service)]));
  }

  async delete(id: string): Promise<boolean> {
    const client = this.#connected();
    return (await whileRedisAnswers(STORE, () => DELETE.run(client, [this.#services, this.#order, this.#paused], [id]))) === 1;
  }

  async pausedIds(): Promise<string[]> {
    const client = this.#connected();
    return (await whileRedisAnswers(STORE, () => client.smembers(this.#paused))).sort();
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    const client = this.#connected();
    await whileRedisAnswers(STORE, () => (paused ? client.sadd(this.#paused, id) : client.srem(this.#paused, id)));
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisRegistryStore is not open');
    return this.#client;
  }
}
