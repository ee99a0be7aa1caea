/**
 * The registry store on Redis (`storage.driver: redis`), shared by every replica on one prefix:
 * `P reg:services` hash id → service JSON, `P reg:order` sorted set id by registration number (an
 * upsert keeps its place, as in the other stores), `P reg:seq` the counter, `P reg:paused` set of
 * paused ids, `P reg:version` bumped by every change. A put, a delete and a pause change are each one
 * Lua script (atomic, the version bumped in it), followed by a notice on the channel
 * `P reg:changed` (`SharedRegistryStore`): every replica re-reads the registry when told.
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../storage/redis.ts';
import { whileRedisAnswers } from '../storage/redis-errors.ts';
import { publishNotice, RedisNotices } from '../storage/redis-notices.ts';
import { RedisScript } from '../storage/redis-script.ts';
import type { RegisteredService, SharedRegistryStore } from './RegistryStore.ts';

/** Where the store connects. */
export type RedisRegistryStoreOptions = RedisStoreOptions;

const PUT = new RedisScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then
  redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[1])
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('INCR', KEYS[4])`);

const DELETE = new RedisScript(`
redis.call('SREM', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
local removed = redis.call('HDEL', KEYS[1], ARGV[1])
if removed == 1 then redis.call('INCR', KEYS[4]) end
return removed`);

/** KEYS: paused set, version. ARGV: id, '1' to pause or '0' to resume. Bumps the version when the mark changed. */
const SET_PAUSED = new RedisScript(`
local changed
if ARGV[2] == '1' then changed = redis.call('SADD', KEYS[1], ARGV[1]) else changed = redis.call('SREM', KEYS[1], ARGV[1]) end
if changed == 1 then redis.call('INCR', KEYS[2]) end
return changed`);

const STORE = 'the registry store (Redis)';

/** A `RegistryStore` on Redis, shared by the replicas on one prefix. */
export class RedisRegistryStore implements SharedRegistryStore {
  readonly #options: RedisRegistryStoreOptions;
  readonly #services: string;
  readonly #order: string;
  readonly #seq: string;
  readonly #paused: string;
  readonly #version: string;
  readonly #channel: string;
  readonly #notices: RedisNotices;
  #client: Redis | undefined;

  constructor(options: RedisRegistryStoreOptions) {
    this.#options = options;
    this.#services = `${options.prefix}reg:services`;
    this.#order = `${options.prefix}reg:order`;
    this.#seq = `${options.prefix}reg:seq`;
    this.#paused = `${options.prefix}reg:paused`;
    this.#version = `${options.prefix}reg:version`;
    this.#channel = `${options.prefix}reg:changed`;
    this.#notices = new RedisNotices(options);
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
    await whileRedisAnswers(STORE, () => PUT.run(client, [this.#services, this.#order, this.#seq, this.#version], [service.id, JSON.stringify(service)]));
    await this.#announce(client);
  }

  async delete(id: string): Promise<boolean> {
    const client = this.#connected();
    const removed = (await whileRedisAnswers(STORE, () => DELETE.run(client, [this.#services, this.#order, this.#paused, this.#version], [id]))) === 1;
    if (removed) await this.#announce(client);
    return removed;
  }

  async pausedIds(): Promise<string[]> {
    const client = this.#connected();
    return (await whileRedisAnswers(STORE, () => client.smembers(this.#paused))).sort();
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    const client = this.#connected();
    const changed = await whileRedisAnswers(STORE, () => SET_PAUSED.run(client, [this.#paused, this.#version], [id, paused ? '1' : '0']));
    if (changed === 1) await this.#announce(client);
  }

  async version(): Promise<number> {
    const client = this.#connected();
    return Number((await whileRedisAnswers(STORE, () => client.get(this.#version))) ?? 0);
  }

  /** Opens the notice connection on first use; `listener` hears every replica's changes and every reconnect of it. */
  async watch(listener: () => void): Promise<() => void> {
    await this.#notices.open();
    const stop = await this.#notices.listen(this.#channel, listener);
    const stopResubscribed = this.#notices.onResubscribed(listener);
    return () => {
      stop();
      stopResubscribed();
    };
  }

  /** Closes the connections. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    await this.#notices.close();
    if (client) await closeRedis(client);
  }

  /** Tells every replica the registry changed (a lost notice is caught by their version check). */
  #announce(client: Redis): Promise<void> {
    return publishNotice(client, this.#channel, 'changed');
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisRegistryStore is not open');
    return this.#client;
  }
}
