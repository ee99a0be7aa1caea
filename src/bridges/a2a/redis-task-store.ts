/**
 * The A2A task store on Redis (`storage.driver: redis`), shared by every replica on one prefix, so
 * any replica answers `GetTask`/`ListTasks` for a task another one ran, and the per-principal
 * bounds hold across replicas. Keys (`P` = prefix, a task key is `{scope}\n{id}`):
 * - `P a2a:tasks` hash task key → task JSON (the SDK's codec); `P a2a:saved` sorted set of task keys
 *   by save number (`P a2a:seq`), for the `maxTasks` bound; `P a2a:expiry` sorted set by expiry
 *   (epoch ms); `P a2a:scope:{scope}` sorted set per caller, for listing;
 * - `P a2a:owner` hash task key → principal; `P a2a:owned:{principal}` sorted set of its task keys
 *   by expiry, for `maxTasksPerPrincipal` and `tasksOf`;
 * - `P a2a:push:{task key}` hash config id → config JSON; `P a2a:pushexpiry` sorted set of task keys
 *   by the expiry of their configs; `P a2a:pushowned:{principal}` sorted set of `{task key}\n{config id}`
 *   by expiry, for `maxPushConfigsPerPrincipal`.
 * A save (with its expiry, trims and the push configs following the task) is one Lua script, as is
 * a push-config save with its bounds. Same limits as the other adapters, same contract suite.
 */
import type { Redis } from 'ioredis';
import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import { bound, ownerOf, type GatewayTaskStore, type PushConfigSave, type TaskStoreLimits } from './open-task-store.ts';
import { listPage, taskScope } from './task-list.ts';

/** Where the store connects. */
export type RedisTaskStoreOptions = RedisStoreOptions;

/**
 * Lua shared by the scripts. KEYS[1..7]: tasks, saved, expiry, seq, owner, pushexpiry, (unused).
 * ARGV[1] the key prefix of the store (`P a2a:`). Task keys are `{scope}\n{id}`.
 */
const FORGET = `
local P = ARGV[1]
local function forgetPush(key, owner)
  local push = P .. 'push:' .. key
  if owner then
    for _, id in ipairs(redis.call('HKEYS', push)) do redis.call('ZREM', P .. 'pushowned:' .. owner, key .. '\\n' .. id) end
  end
  redis.call('DEL', push)
  redis.call('ZREM', KEYS[6], key)
end
local function forget(key)
  local scope = string.match(key, '^(.*)\\n[^\\n]*$')
  local owner = redis.call('HGET', KEYS[5], key)
  redis.call('HDEL', KEYS[1], key)
  redis.call('ZREM', KEYS[2], key)
  redis.call('ZREM', KEYS[3], key)
  if scope then redis.call('ZREM', P .. 'scope:' .. scope, key) end
  if owner then redis.call('ZREM', P .. 'owned:' .. owner, key) end
  forgetPush(key, owner)
  redis.call('HDEL', KEYS[5], key)
end
local function expire(now)
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do forget(key) end
  for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now)) do
    if redis.call('HEXISTS', KEYS[1], key) == 0 then
      forgetPush(key, redis.call('HGET', KEYS[5], key))
      redis.call('HDEL', KEYS[5], key)
    end
  end
end
`;

/**
 * Save ARGV[2] (task key) as ARGV[3] expiring at ARGV[4] for owner ARGV[6]; its push configs follow
 * the task's expiry; then drop what expired at ARGV[5], the owner's oldest beyond ARGV[8] and the
 * oldest overall beyond ARGV[7].
 */
const SAVE = new RedisScript(`${FORGET}
local key, expiresAt, owner = ARGV[2], tonumber(ARGV[4]), ARGV[6]
local seq = redis.call('INCR', KEYS[4])
local scope = string.match(key, '^(.*)\\n[^\\n]*$')
redis.call('HSET', KEYS[1], key, ARGV[3])
redis.call('ZADD', KEYS[2], seq, key)
redis.call('ZADD', KEYS[3], expiresAt, key)
redis.call('ZADD', P .. 'scope:' .. scope, seq, key)
redis.call('HSET', KEYS[5], key, owner)
redis.call('ZADD', P .. 'owned:' .. owner, expiresAt, key)
local push = P .. 'push:' .. key
if redis.call('EXISTS', push) == 1 then
  redis.call('ZADD', KEYS[6], 'GT', expiresAt, key)
  for _, id in ipairs(redis.call('HKEYS', push)) do redis.call('ZADD', P .. 'pushowned:' .. owner, 'GT', expiresAt, key .. '\\n' .. id) end
end
expire(ARGV[5])
local own = redis.call('ZCARD', P .. 'owned:' .. owner) - tonumber(ARGV[8])
if own > 0 then
  for _, k in ipairs(redis.call('ZRANGE', P .. 'owned:' .. owner, 0, own - 1)) do forget(k) end
end
local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[7])
if excess > 0 then
  for _, k in ipairs(redis.call('ZRANGE', KEYS[2], 0, excess - 1)) do forget(k) end
end
return seq`);

/**
 * Save push config ARGV[3] = ARGV[4] of task key ARGV[2] for owner ARGV[6] at time ARGV[5], expiring
 * with its task (at ARGV[7] when the task is not saved yet); refuse beyond ARGV[8] per task or
 * ARGV[9] per owner.
 */
const SAVE_PUSH = new RedisScript(`${FORGET}
local key, id, now, owner = ARGV[2], ARGV[3], tonumber(ARGV[5]), ARGV[6]
local push = P .. 'push:' .. key
local owned = P .. 'pushowned:' .. owner
local pushExpiry = redis.call('ZSCORE', KEYS[6], key)
if pushExpiry and tonumber(pushExpiry) <= now then
  forgetPush(key, redis.call('HGET', KEYS[5], key))
end
if redis.call('HEXISTS', push, id) == 0 then
  if redis.call('HLEN', push) >= tonumber(ARGV[8]) then return 'task-full' end
  redis.call('ZREMRANGEBYSCORE', owned, '-inf', now)
  if redis.call('ZCARD', owned) >= tonumber(ARGV[9]) then return 'principal-full' end
end
local expiresAt = tonumber(ARGV[7])
local taskExpiry = redis.call('ZSCORE', KEYS[3], key)
if taskExpiry then expiresAt = tonumber(taskExpiry) end
redis.call('HSET', push, id, ARGV[4])
redis.call('ZADD', KEYS[6], 'GT', expiresAt, key)
redis.call('ZADD', owned, expiresAt, key .. '\\n' .. id)
redis.call('HSET', KEYS[5], key, owner)
return 'saved'`);

/** Delete push config ARGV[3] of task key ARGV[2] (owner ARGV[4]). */
const DELETE_PUSH = new RedisScript(`
local P, key, id = ARGV[1], ARGV[2], ARGV[3]
local push = P .. 'push:' .. key
redis.call('HDEL', push, id)
redis.call('ZREM', P .. 'pushowned:' .. ARGV[4], key .. '\\n' .. id)
if redis.call('EXISTS', push) == 0 then redis.call('ZREM', KEYS[1], key) end
return 1`);

const STORE = 'the A2A task store (Redis)';

/** A bounded, expiring task store on Redis. */
export class RedisTaskStore implements GatewayTaskStore {
  readonly #options: RedisTaskStoreOptions;
  readonly #limits: TaskStoreLimits;
  readonly #prefix: string;
  readonly #keys: { tasks: string; saved: string; expiry: string; seq: string; owner: string; pushExpiry: string };
  #client: Redis | undefined;

  constructor(options: RedisTaskStoreOptions, limits: TaskStoreLimits) {
    this.#options = options;
    this.#limits = limits;
    const p = `${options.prefix}a2a:`;
    this.#prefix = p;
    this.#keys = { tasks: `${p}tasks`, saved: `${p}saved`, expiry: `${p}expiry`, seq: `${p}seq`, owner: `${p}owner`, pushExpiry: `${p}pushexpiry` };
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  /** Saves `task` for the caller's scope; drops expired tasks, the owner's oldest beyond `maxTasksPerPrincipal` and the oldest beyond `maxTasks`. */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const client = this.#connected();
    const now = this.#now();
    const key = `${taskScope(context)}\n${task.id}`;
    const json = JSON.stringify(Task.toJSON(task));
    await whileRedisAnswers(STORE, () =>
      SAVE.run(client, this.#scriptKeys(), [this.#prefix, key, json, now + this.#limits.ttlMs, now, ownerOf(context), this.#limits.maxTasks, bound(this.#limits.maxTasksPerPrincipal)]),
    );
  }

  /** The caller's task with this id, or undefined (unknown, another owner's, or expired). */
  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const client = this.#connected();
    const key = `${taskScope(context)}\n${taskId}`;
    const [json, expires] = await whileRedisAnswers(STORE, () => Promise.all([client.hget(this.#keys.tasks, key), client.zscore(this.#keys.expiry, key)]));
    if (json === null || expires === null || Number(expires) <= this.#now()) return undefined;
    return Task.fromJSON(JSON.parse(json));
  }

  /** The caller's tasks, newest status first, filtered and paged (`task-list.ts`). */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const client = this.#connected();
    const now = this.#now();
    const tasks = await whileRedisAnswers(STORE, async () => {
      const keys = await client.zrange(`${this.#prefix}scope:${taskScope(context)}`, '0', '-1');
      if (keys.length === 0) return [];
      const [rows, expiries] = await Promise.all([client.hmget(this.#keys.tasks, ...keys), Promise.all(keys.map((key) => client.zscore(this.#keys.expiry, key)))]);
      return rows.filter((row, i): row is string => row !== null && Number(expiries[i]) > now).map((row) => Task.fromJSON(JSON.parse(row)));
    });
    return listPage(tasks, params);
  }

  async tasksOf(context: ServerCallContext): Promise<number> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => client.zcount(`${this.#prefix}owned:${ownerOf(context)}`, `(${this.#now()}`, '+inf'));
  }

  async savePushConfig(taskId: string, context: ServerCallContext, configId: string, json: string): Promise<PushConfigSave> {
    const client = this.#connected();
    const now = this.#now();
    const key = `${taskScope(context)}\n${taskId}`;
    const limits = this.#limits;
    const args = [this.#prefix, key, configId, json, now, ownerOf(context), now + limits.ttlMs, bound(limits.maxPushConfigsPerTask), bound(limits.maxPushConfigsPerPrincipal)];
    return (await whileRedisAnswers(STORE, () => SAVE_PUSH.run(client, this.#scriptKeys(), args))) as PushConfigSave;
  }

  async pushConfigs(taskId: string, context: ServerCallContext): Promise<string[]> {
    const client = this.#connected();
    const key = `${taskScope(context)}\n${taskId}`;
    const [configs, expires] = await whileRedisAnswers(STORE, () => Promise.all([client.hvals(`${this.#prefix}push:${key}`), client.zscore(this.#keys.pushExpiry, key)]));
    return expires !== null && Number(expires) > this.#now() ? configs : [];
  }

  async deletePushConfig(taskId: string, context: ServerCallContext, configId: string): Promise<void> {
    const client = this.#connected();
    const key = `${taskScope(context)}\n${taskId}`;
    await whileRedisAnswers(STORE, () => DELETE_PUSH.run(client, [this.#keys.pushExpiry], [this.#prefix, key, configId, ownerOf(context)]));
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  #scriptKeys(): string[] {
    const k = this.#keys;
    return [k.tasks, k.saved, k.expiry, k.seq, k.owner, k.pushExpiry];
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisTaskStore is not open');
    return this.#client;
  }

  #now(): number {
    return (this.#limits.now ?? Date.now)();
  }
}
