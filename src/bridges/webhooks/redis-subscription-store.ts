/**
 * The webhook subscription store on Redis (`storage.driver: redis`), shared by every replica on
 * one prefix, indexed so no listing scans every subscription:
 * `P sub:all` hash id → subscription JSON (its status aside), `P sub:status` hash id → status,
 * `P sub:seq` the creation counter, sorted sets by creation number `P sub:principal:{principal}`
 * and `P sub:active`, and `P sub:service:{serviceId}` the set of a service's subscriptions.
 * Each change is one Lua script (atomic); key names are built from the prefix inside the scripts,
 * so Redis Cluster is not supported.
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import type { Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

/** Where the store connects. */
export type RedisSubscriptionStoreOptions = RedisStoreOptions;

/** ARGV: prefix, id, JSON, status, principal, serviceId ('' = none). */
const CREATE = new RedisScript(`
local p = ARGV[1]
if redis.call('HEXISTS', p .. 'sub:all', ARGV[2]) == 1 then return 0 end
local seq = redis.call('INCR', p .. 'sub:seq')
redis.call('HSET', p .. 'sub:all', ARGV[2], ARGV[3])
redis.call('HSET', p .. 'sub:status', ARGV[2], ARGV[4])
redis.call('HSET', p .. 'sub:number', ARGV[2], seq)
redis.call('ZADD', p .. 'sub:principal:' .. ARGV[5], seq, ARGV[2])
if ARGV[4] == 'active' then redis.call('ZADD', p .. 'sub:active', seq, ARGV[2]) end
if ARGV[6] ~= '' then redis.call('SADD', p .. 'sub:service:' .. ARGV[6], ARGV[2]) end
return 1`);

/** ARGV: prefix, id, status. */
const SET_STATUS = new RedisScript(`
local p = ARGV[1]
local seq = redis.call('HGET', p .. 'sub:number', ARGV[2])
if not seq then return 0 end
redis.call('HSET', p .. 'sub:status', ARGV[2], ARGV[3])
if ARGV[3] == 'active' then redis.call('ZADD', p .. 'sub:active', seq, ARGV[2]) else redis.call('ZREM', p .. 'sub:active', ARGV[2]) end
return 1`);

/** ARGV: prefix, then the ids; returns the ids deleted. */
const DELETE = new RedisScript(`
local p = ARGV[1]
local deleted = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local json = redis.call('HGET', p .. 'sub:all', id)
  if json then
    local sub = cjson.decode(json)
    redis.call('HDEL', p .. 'sub:all', id)
    redis.call('HDEL', p .. 'sub:status', id)
    redis.call('HDEL', p .. 'sub:number', id)
    redis.call('ZREM', p .. 'sub:active', id)
    redis.call('ZREM', p .. 'sub:principal:' .. sub.principal, id)
    if type(sub.serviceId) == 'string' then redis.call('SREM', p .. 'sub:service:' .. sub.serviceId, id) end
    table.insert(deleted, id)
  end
end
return deleted`);

const STORE = 'the subscription store (Redis)';

/** A `SubscriptionStore` on Redis. */
export class RedisSubscriptionStore implements SubscriptionStore {
  readonly #options: RedisSubscriptionStoreOptions;
  readonly #p: string;
  #client: Redis | undefined;

  constructor(options: RedisSubscriptionStoreOptions) {
    this.#options = options;
    this.#p = options.prefix;
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  async create(subscription: Subscription): Promise<void> {
    const { status, ...rest } = subscription;
    const created = await this.#run(CREATE, [JSON.stringify(rest), status, subscription.principal, subscription.serviceId ?? ''], subscription.id);
    if (created !== 1) throw new Error(`subscription ${subscription.id} exists`);
  }

  async get(id: string): Promise<Subscription | undefined> {
    return (await this.#load([id]))[0];
  }

  async listByPrincipal(principal: string): Promise<Subscription[]> {
    const client = this.#connected();
    return this.#load(await whileRedisAnswers(STORE, () => client.zrange(`${this.#p}sub:principal:${principal}`, '0', '-1')));
  }

  async listActive(): Promise<Subscription[]> {
    const client = this.#connected();
    return this.#load(await whileRedisAnswers(STORE, () => client.zrange(`${this.#p}sub:active`, '0', '-1')));
  }

  async setStatus(id: string, status: SubscriptionStatus): Promise<boolean> {
    return (await this.#run(SET_STATUS, [status], id)) === 1;
  }

  async delete(id: string): Promise<boolean> {
    return ((await this.#run(DELETE, [], id)) as string[]).length === 1;
  }

  async deleteByService(serviceId: string): Promise<string[]> {
    const client = this.#connected();
    const ids = await whileRedisAnswers(STORE, () => client.smembers(`${this.#p}sub:service:${serviceId}`));
    if (ids.length === 0) return [];
    return (await this.#run(DELETE, ids.slice(1), ids[0]!)) as string[];
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  /** The subscriptions of `ids`, in that order, skipping any deleted meanwhile. */
  async #load(ids: string[]): Promise<Subscription[]> {
    if (ids.length === 0) return [];
    const client = this.#connected();
    const [rows, statuses] = await whileRedisAnswers(STORE, () =>
      Promise.all([client.hmget(`${this.#p}sub:all`, ...ids), client.hmget(`${this.#p}sub:status`, ...ids)]),
    );
    const found: Subscription[] = [];
    rows.forEach((row, i) => {
      if (row !== null && statuses[i]) found.push({ ...(JSON.parse(row) as Omit<Subscription, 'status'>), status: statuses[i] as SubscriptionStatus });
    });
    return found;
  }

  /** Runs a script with ARGV prefix, id, ...args. */
  async #run(script: RedisScript, args: string[], id: string): Promise<unknown> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => script.run(client, [], [this.#p, id, ...args]));
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisSubscriptionStore is not open');
    return this.#client;
  }
}
