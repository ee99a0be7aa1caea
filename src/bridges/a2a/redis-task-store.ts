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
 * a push-config save with its bounds. Every script declares every key it touches in `KEYS` (what
 * a save forgets is passed in, checked by the script: `SAVE`). Same limits as the other adapters,
 * same contract suite.
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
 * Save ARGV[2] (task key) as ARGV[3] expiring at ARGV[4] for owner ARGV[6]; its push configs follow
 * the task's expiry; then drop what expired at ARGV[5], the owner's oldest beyond ARGV[8] and the
 * oldest overall beyond ARGV[7]. Declares every key it touches:
 * KEYS[1..6] tasks, saved, expiry, seq, owner, pushexpiry; KEYS[7..10] the task's scope set, its
 * owner's task set, its push configs and its owner's push set; then per task to forget (ARGV's
 * plan) its scope set, owner's task set, push configs and owner's push set, then per push-only entry
 * to forget its push configs and owner's push set.
 * The plan (ARGV[9] = n, n pairs task key/owner, then m, m pairs) is what the client was told to
 * forget: the script works it out again before writing anything and, when it differs (the first
 * call, or another replica changed the store), answers `{'plan', ...}` with the current one, and the
 * client runs it again with those keys. So what it forgets is decided and done in one script.
 */
const SAVE = new RedisScript(`
local key, expiresAt, owner, now = ARGV[2], tonumber(ARGV[4]), ARGV[6], ARGV[5]
local gone, tasks, pushOnly = {}, {}, {}
local function ownerOf(k)
  if k == key then return owner end
  return redis.call('HGET', KEYS[5], k) or ''
end
local function drop(k)
  if gone[k] then return end
  gone[k] = true
  table.insert(tasks, k)
  table.insert(tasks, ownerOf(k))
end
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do if k ~= key then drop(k) end end
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now)) do
  if k ~= key and not gone[k] and redis.call('HEXISTS', KEYS[1], k) == 0 then
    table.insert(pushOnly, k)
    table.insert(pushOnly, redis.call('HGET', KEYS[5], k) or '')
  end
end
local function oldest(set, count, lastKey, lastScore)
  -- the first count members of set once the gone ones are out and key sits at lastScore (or last)
  local removed = 0
  for k in pairs(gone) do if k ~= key and redis.call('ZSCORE', set, k) then removed = removed + 1 end end
  local rows = redis.call('ZRANGE', set, 0, count + removed, 'WITHSCORES')
  local out, placed = {}, gone[key] ~= nil
  for i = 1, #rows, 2 do
    local k, score = rows[i], tonumber(rows[i + 1])
    if k ~= key and not gone[k] then
      if not placed and lastScore and (lastScore < score or (lastScore == score and key < k)) then table.insert(out, key) placed = true end
      table.insert(out, k)
    end
  end
  if not placed then table.insert(out, key) end
  local firsts = {}
  for i = 1, math.min(count, #out) do firsts[i] = out[i] end
  return firsts
end
local function size(set, stale)
  local n = redis.call('ZCARD', set)
  if not redis.call('ZSCORE', set, key) then n = n + 1 end
  for k in pairs(gone) do
    if k ~= key and redis.call('ZSCORE', set, k) and not stale(k) then n = n - 1 end
  end
  if gone[key] then n = n - 1 end
  return n
end
local own = size(KEYS[8], function(k) return ownerOf(k) ~= owner end) - tonumber(ARGV[8])
if own > 0 then for _, k in ipairs(oldest(KEYS[8], own, key, expiresAt)) do drop(k) end end
local excess = size(KEYS[2], function() return false end) - tonumber(ARGV[7])
if excess > 0 then for _, k in ipairs(oldest(KEYS[2], excess, key, nil)) do drop(k) end end
local planned, same = {}, true
local n = tonumber(ARGV[9])
local m = tonumber(ARGV[10 + 2 * n])
if n * 2 ~= #tasks or m * 2 ~= #pushOnly then same = false end
for i = 1, #tasks do if same and ARGV[9 + i] ~= tasks[i] then same = false end end
for i = 1, #pushOnly do if same and ARGV[10 + 2 * n + i] ~= pushOnly[i] then same = false end end
if not same then
  local reply = {'plan', #tasks / 2}
  for _, v in ipairs(tasks) do table.insert(reply, v) end
  table.insert(reply, #pushOnly / 2)
  for _, v in ipairs(pushOnly) do table.insert(reply, v) end
  return reply
end
local seq = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], key, ARGV[3])
redis.call('ZADD', KEYS[2], seq, key)
redis.call('ZADD', KEYS[3], expiresAt, key)
redis.call('ZADD', KEYS[7], seq, key)
redis.call('HSET', KEYS[5], key, owner)
redis.call('ZADD', KEYS[8], expiresAt, key)
if redis.call('EXISTS', KEYS[9]) == 1 then
  redis.call('ZADD', KEYS[6], 'GT', expiresAt, key)
  for _, id in ipairs(redis.call('HKEYS', KEYS[9])) do redis.call('ZADD', KEYS[10], 'GT', expiresAt, key .. '\\n' .. id) end
end
local function forgetPush(k, hasOwner, push, pushOwned)
  if hasOwner then
    for _, id in ipairs(redis.call('HKEYS', push)) do redis.call('ZREM', pushOwned, k .. '\\n' .. id) end
  end
  redis.call('DEL', push)
  redis.call('ZREM', KEYS[6], k)
end
local base = 10
for i = 1, n do
  local k, kOwner = tasks[2 * i - 1], tasks[2 * i]
  local at = base + 4 * (i - 1)
  redis.call('HDEL', KEYS[1], k)
  redis.call('ZREM', KEYS[2], k)
  redis.call('ZREM', KEYS[3], k)
  redis.call('ZREM', KEYS[at + 1], k)
  if kOwner ~= '' then redis.call('ZREM', KEYS[at + 2], k) end
  forgetPush(k, kOwner ~= '', KEYS[at + 3], KEYS[at + 4])
  redis.call('HDEL', KEYS[5], k)
end
base = base + 4 * n
for i = 1, m do
  local k, kOwner = pushOnly[2 * i - 1], pushOnly[2 * i]
  forgetPush(k, kOwner ~= '', KEYS[base + 2 * i - 1], KEYS[base + 2 * i])
  redis.call('HDEL', KEYS[5], k)
end
return seq`);

/**
 * Save push config ARGV[3] = ARGV[4] of task key ARGV[2] for owner ARGV[6] at time ARGV[5], expiring
 * with its task (at ARGV[7] when the task is not saved yet); refuse beyond ARGV[8] per task or
 * ARGV[9] per owner. Declares every key: KEYS[1..6] as `SAVE`'s, KEYS[7] the task's push configs,
 * KEYS[8] the owner's, KEYS[9] those of the task's recorded owner ARGV[10] ('' = none, KEYS[9] then
 * unused), read before the script; 'retry' when that owner changed meanwhile.
 */
const SAVE_PUSH = new RedisScript(`
local key, id, now, owner = ARGV[2], ARGV[3], tonumber(ARGV[5]), ARGV[6]
local push, owned = KEYS[7], KEYS[8]
if (redis.call('HGET', KEYS[5], key) or '') ~= ARGV[10] then return 'retry' end
local pushExpiry = redis.call('ZSCORE', KEYS[6], key)
if pushExpiry and tonumber(pushExpiry) <= now then
  if ARGV[10] ~= '' then
    for _, config in ipairs(redis.call('HKEYS', push)) do redis.call('ZREM', KEYS[9], key .. '\\n' .. config) end
  end
  redis.call('DEL', push)
  redis.call('ZREM', KEYS[6], key)
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

/** Delete push config ARGV[2] of task key ARGV[1]. KEYS: push expiry, the task's push configs, the owner's push configs. */
const DELETE_PUSH = new RedisScript(`
local key, id = ARGV[1], ARGV[2]
redis.call('HDEL', KEYS[2], id)
redis.call('ZREM', KEYS[3], key .. '\\n' .. id)
if redis.call('EXISTS', KEYS[2]) == 0 then redis.call('ZREM', KEYS[1], key) end
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
    const owner = ownerOf(context);
    const own = [`${this.#prefix}scope:${taskScope(context)}`, `${this.#prefix}owned:${owner}`, `${this.#prefix}push:${key}`, `${this.#prefix}pushowned:${owner}`];
    const args = [this.#prefix, key, json, now + this.#limits.ttlMs, now, owner, this.#limits.maxTasks, bound(this.#limits.maxTasksPerPrincipal)];
    let plan: { tasks: string[]; pushOnly: string[] } = { tasks: [], pushOnly: [] };
    for (;;) {
      const keys = [...this.#scriptKeys(), ...own, ...this.#planKeys(plan)];
      const planArgs = [plan.tasks.length / 2, ...plan.tasks, plan.pushOnly.length / 2, ...plan.pushOnly];
      const reply = await whileRedisAnswers(STORE, () => SAVE.run(client, keys, [...args, ...planArgs]));
      if (!Array.isArray(reply)) return;
      const n = Number(reply[1]);
      plan = { tasks: reply.slice(2, 2 + 2 * n).map(String), pushOnly: reply.slice(3 + 2 * n).map(String) };
    }
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
    const owner = ownerOf(context);
    for (;;) {
      const recorded = (await whileRedisAnswers(STORE, () => client.hget(this.#keys.owner, key))) ?? '';
      const keys = [...this.#scriptKeys(), `${this.#prefix}push:${key}`, `${this.#prefix}pushowned:${owner}`, `${this.#prefix}pushowned:${recorded}`];
      const args = [this.#prefix, key, configId, json, now, owner, now + limits.ttlMs, bound(limits.maxPushConfigsPerTask), bound(limits.maxPushConfigsPerPrincipal), recorded];
      const outcome = await whileRedisAnswers(STORE, () => SAVE_PUSH.run(client, keys, args));
      if (outcome !== 'retry') return outcome as PushConfigSave;
    }
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
    await whileRedisAnswers(STORE, () => DELETE_PUSH.run(client, [this.#keys.pushExpiry, `${this.#prefix}push:${key}`, `${this.#prefix}pushowned:${ownerOf(context)}`], [key, configId]));
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  /** The keys SAVE touches to forget `plan`'s tasks (scope set, owner's tasks, push configs, owner's push set) and push-only entries. */
  #planKeys(plan: { tasks: string[]; pushOnly: string[] }): string[] {
    const p = this.#prefix;
    const keys: string[] = [];
    for (let i = 0; i < plan.tasks.length; i += 2) {
      const [task, owner] = [plan.tasks[i]!, plan.tasks[i + 1]!];
      const scope = task.slice(0, task.lastIndexOf('\n'));
      keys.push(`${p}scope:${scope}`, `${p}owned:${owner}`, `${p}push:${task}`, `${p}pushowned:${owner}`);
    }
    for (let i = 0; i < plan.pushOnly.length; i += 2) keys.push(`${p}push:${plan.pushOnly[i]!}`, `${p}pushowned:${plan.pushOnly[i + 1]!}`);
    return keys;
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
