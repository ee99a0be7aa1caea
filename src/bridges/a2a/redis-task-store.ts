/**
 * The A2A task store on Redis (`storage.driver: redis`), shared by every replica on one prefix, so
 * any replica answers `GetTask`/`ListTasks` for a task another one ran. Keys (`P` = prefix):
 * `P a2a:tasks` hash `{scope}\n{id}` → task JSON (the SDK's codec); `P a2a:saved` sorted set of those
 * keys by save number (`P a2a:seq`), for the `maxTasks` bound; `P a2a:expiry` sorted set by expiry
 * (epoch ms); `P a2a:scope:{scope}` sorted set per caller, for listing. A save, with its expiry and
 * trim, is one Lua script. Same limits as the other adapters, same contract suite.
 */
import type { Redis } from 'ioredis';
import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import type { TaskStoreLimits } from './memory-task-store.ts';
import { listPage, taskScope } from './task-list.ts';

/** Where the store connects. */
export type RedisTaskStoreOptions = RedisStoreOptions;

/**
 * Save ARGV[1] (key `{scope}\n{id}`) as ARGV[2] expiring at ARGV[3]; then drop what expired at ARGV[4]
 * and the oldest saves beyond ARGV[5]. KEYS: tasks, saved, expiry, seq; ARGV[6] the scope-set prefix.
 */
const SAVE = new RedisScript(`
local function forget(key)
  local scope = string.match(key, '^(.*)\\n[^\\n]*$')
  redis.call('HDEL', KEYS[1], key)
  redis.call('ZREM', KEYS[2], key)
  redis.call('ZREM', KEYS[3], key)
  if scope then redis.call('ZREM', ARGV[6] .. scope, key) end
end
local seq = redis.call('INCR', KEYS[4])
local scope = string.match(ARGV[1], '^(.*)\\n[^\\n]*$')
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], seq, ARGV[1])
redis.call('ZADD', KEYS[3], ARGV[3], ARGV[1])
redis.call('ZADD', ARGV[6] .. scope, seq, ARGV[1])
for _, key in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', ARGV[4])) do forget(key) end
local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[5])
if excess > 0 then
  for _, key in ipairs(redis.call('ZRANGE', KEYS[2], 0, excess - 1)) do forget(key) end
end
return seq`);

const STORE = 'the A2A task store (Redis)';

/** A bounded, expiring `TaskStore` on Redis. */
export class RedisTaskStore implements TaskStore {
  readonly #options: RedisTaskStoreOptions;
  readonly #limits: TaskStoreLimits;
  readonly #keys: { tasks: string; saved: string; expiry: string; seq: string; scope: string };
  #client: Redis | undefined;

  constructor(options: RedisTaskStoreOptions, limits: TaskStoreLimits) {
    this.#options = options;
    this.#limits = limits;
    const p = `${options.prefix}a2a:`;
    this.#keys = { tasks: `${p}tasks`, saved: `${p}saved`, expiry: `${p}expiry`, seq: `${p}seq`, scope: `${p}scope:` };
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  /** Saves `task` for the caller's scope; drops expired tasks and the oldest beyond `maxTasks`. */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const client = this.#connected();
    const k = this.#keys;
    const now = this.#now();
    const key = `${taskScope(context)}\n${task.id}`;
    await whileRedisAnswers(STORE, () =>
      SAVE.run(client, [k.tasks, k.saved, k.expiry, k.seq], [key, JSON.stringify(Task.toJSON(task)), now + this.#limits.ttlMs, now, this.#limits.maxTasks, k.scope]),
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
      const keys = await client.zrange(`${this.#keys.scope}${taskScope(context)}`, '0', '-1');
      if (keys.length === 0) return [];
      const [rows, expiries] = await Promise.all([client.hmget(this.#keys.tasks, ...keys), Promise.all(keys.map((key) => client.zscore(this.#keys.expiry, key)))]);
      return rows.filter((row, i): row is string => row !== null && Number(expiries[i]) > now).map((row) => Task.fromJSON(JSON.parse(row)));
    });
    return listPage(tasks, params);
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisTaskStore is not open');
    return this.#client;
  }

  #now(): number {
    return (this.#limits.now ?? Date.now)();
  }
}
