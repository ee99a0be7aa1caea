/**
 * The A2A task store on Redis (`storage.driver: redis`), shared by every replica on one prefix, so
 * any replica answers `GetTask`/`ListTasks` for a task another one ran, and the per-principal
 * bounds hold across replicas. Keys (`P` = prefix, a task key is `{scope}\n{id}`):
 * - `P a2a:tasks` hash task key → task JSON (the SDK's codec); `P a2a:saved` sorted set of task keys
 *   by save number (`P a2a:seq`), for the `maxTasks` bound; `P a2a:claimed` the same for the keys
 *   saved with an owner (fewer claimed than saved: an older gateway wrote keys without one, which
 *   count toward `maxTasks` and are the first dropped to make room); `P a2a:expiry` sorted set by
 *   expiry (epoch ms); `P a2a:scope:{scope}` sorted set per caller, for listing;
 * - `P a2a:owner` hash task key → principal; `P a2a:owned:{principal}` sorted set of its task keys
 *   by expiry, for `maxTasksPerPrincipal` and `tasksOf`;
 * - `P a2a:push:{task key}` hash config id → config JSON; `P a2a:pushexpiry` sorted set of task keys
 *   by the expiry of their configs; `P a2a:pushowned:{principal}` sorted set of `{task key}\n{config id}`
 *   by expiry, for `maxPushConfigsPerPrincipal`.
 * A save (with its expiry, trims and the push configs following the task) is one Lua script, as is
 * a push-config save with its bounds. Every script declares every key it touches in `KEYS` (ready
 * for a Redis Cluster): the save is given the tasks it may forget with their owners, and answers
 * which it must forget when it was not given them (then runs again). Same limits as the other
 * adapters, same contract suite.
 */
import type { Redis } from 'ioredis';
import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { storeUnavailable, whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import { bound, ownerOf, tasksExhausted, type GatewayTaskStore, type PushConfigSave, type TaskStoreLimits } from './open-task-store.ts';
import { listPage, taskScope } from './task-list.ts';

/** Where the store connects. */
export type RedisTaskStoreOptions = RedisStoreOptions;

/** The tasks expiring first that a save names for the next save to declare. */
const HINTED_EXPIRIES = 2;

/**
 * Save ARGV[1] (task key) as ARGV[2] expiring at ARGV[3] for owner ARGV[5], unless it is new and
 * the store is full of other owners' tasks (then nothing is saved: {'full', soonest expiry}). First
 * drop what expired at ARGV[4]; room within ARGV[6] (`maxTasks`) comes from ownerless keys (written
 * by an older gateway: no `owner` entry), oldest first, then the owner's own oldest; the owner's
 * oldest beyond ARGV[7] (`maxTasksPerPrincipal`) go too. Its push configs follow the task's expiry.
 *
 * Declares every key: KEYS[1..7] tasks, saved, expiry, seq, owner, pushexpiry, claimed; KEYS[8..11]
 * the saved task's owner's tasks, its scope's tasks, its push configs, its owner's push configs;
 * then, per task the save may forget (ARGV[8] of them, ARGV[9..] its key and recorded owner, ''
 * for none), its scope's tasks, its owner's tasks, its push configs and its owner's push configs
 * (the saved keys set in place of a key it does not have). Before each step that forgets tasks (the
 * expired ones, then those the bounds drop) the script checks each was declared with its recorded
 * owner; when one was not, it changes nothing in that step and answers {'retry', key, owner, ...}
 * (every task that step forgets), and the caller runs it again with them. A save answers
 * {'saved', key, owner, ...}: the tasks the next save will likely forget (`hint` below), which the
 * caller declares in its next save's first run, so a store at its bound or expiring tasks as it
 * goes usually saves in one run.
 */
const SAVE = new RedisScript(`
local key, json, expiresAt, now, owner = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4], ARGV[5]
local maxTasks, perOwner = tonumber(ARGV[6]), tonumber(ARGV[7])
local owned, scopeKey, push, pushOwned = KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local F, ki = {}, 12
for i = 9, 8 + 2 * tonumber(ARGV[8]), 2 do
  F[ARGV[i]] = { owner = ARGV[i + 1], scope = KEYS[ki], owned = KEYS[ki + 1], push = KEYS[ki + 2], pushOwned = KEYS[ki + 3] }
  ki = ki + 4
end
-- {'retry', key, owner, ...} for the tasks \`keys\` when one is not declared with its recorded owner, else nil.
local function undeclared(keys)
  local answer, all = {'retry'}, true
  for _, k in ipairs(keys) do
    local o = redis.call('HGET', KEYS[5], k) or ''
    table.insert(answer, k)
    table.insert(answer, o)
    if not F[k] or F[k].owner ~= o then all = false end
  end
  if all then return nil end
  return answer
end
local function forgetPush(k)
  local f = F[k]
  if f.owner ~= '' then
    for _, id in ipairs(redis.call('HKEYS', f.push)) do redis.call('ZREM', f.pushOwned, k .. '\\n' .. id) end
  end
  redis.call('DEL', f.push)
  redis.call('ZREM', KEYS[6], k)
end
local function forget(k)
  local f = F[k]
  redis.call('HDEL', KEYS[1], k)
  redis.call('ZREM', KEYS[2], k)
  redis.call('ZREM', KEYS[3], k)
  redis.call('ZREM', KEYS[7], k)
  redis.call('ZREM', f.scope, k)
  if f.owner ~= '' then redis.call('ZREM', f.owned, k) end
  forgetPush(k)
  redis.call('HDEL', KEYS[5], k)
end
-- The expired tasks, and the push configs whose task is gone and whose expiry passed.
local expired = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)
local pushExpired = {}
for _, k in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now)) do
  if redis.call('HEXISTS', KEYS[1], k) == 0 then table.insert(pushExpired, k) end
end
local retry = undeclared(expired) or undeclared(pushExpired)
if retry then return retry end
for _, k in ipairs(expired) do forget(k) end
for _, k in ipairs(pushExpired) do
  forgetPush(k)
  redis.call('HDEL', KEYS[5], k)
end
local isNew = redis.call('HEXISTS', KEYS[1], key) == 0
local own = redis.call('ZCARD', owned)
local before = redis.call('ZSCORE', owned, key)
if before then own = own - 1 end
local ownDrop = math.max(0, own + 1 - perOwner)
local total = redis.call('ZCARD', KEYS[2])
if isNew then total = total + 1 end
local need = total - ownDrop - maxTasks
local ownerless = {}
-- Keys without an owner exist only when fewer keys are claimed than saved (an older gateway wrote
-- them): only then walk the saved keys, oldest first, marking the owned ones met on the way.
if need > 0 and redis.call('ZCARD', KEYS[2]) > redis.call('ZCARD', KEYS[7]) then
  local from = 0
  while #ownerless < need do
    local batch = redis.call('ZRANGE', KEYS[2], from, from + 199, 'WITHSCORES')
    if #batch == 0 then break end
    for i = 1, #batch, 2 do
      local k = batch[i]
      if k ~= key and #ownerless < need then
        if redis.call('HEXISTS', KEYS[5], k) == 0 then table.insert(ownerless, k)
        else redis.call('ZADD', KEYS[7], batch[i + 1], k) end
      end
    end
    from = from + 200
  end
end
need = need - #ownerless
local ownMore = math.max(0, math.min(need, own - ownDrop))
if isNew and need - ownMore > 0 then
  local soonest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
  return {'full', soonest[2] or '0'}
end
-- The owner's other keys, least recently saved first: by expiry (this key at its new one), ties
-- (saves in one ms) by save number. The key is put at its new expiry only to find them, and back.
local drop, oldest = ownDrop + ownMore, {}
if drop > 0 then
  redis.call('ZADD', owned, expiresAt, key)
  local bound = redis.call('ZRANGE', owned, drop, drop, 'WITHSCORES')
  local candidates = {}
  for _, k in ipairs(redis.call('ZRANGEBYSCORE', owned, '-inf', bound[2])) do
    if k ~= key then table.insert(candidates, { k, tonumber(redis.call('ZSCORE', KEYS[2], k) or '0') }) end
  end
  if before then redis.call('ZADD', owned, before, key) else redis.call('ZREM', owned, key) end
  table.sort(candidates, function(a, b) return a[2] < b[2] end)
  for i = 1, math.min(drop, #candidates) do table.insert(oldest, candidates[i][1]) end
end
retry = undeclared(ownerless) or undeclared(oldest)
if retry then return retry end
local seq = redis.call('INCR', KEYS[4])
redis.call('HSET', KEYS[1], key, json)
redis.call('ZADD', KEYS[2], seq, key)
redis.call('ZADD', KEYS[7], seq, key)
redis.call('ZADD', KEYS[3], expiresAt, key)
redis.call('ZADD', scopeKey, seq, key)
redis.call('HSET', KEYS[5], key, owner)
if redis.call('EXISTS', push) == 1 then
  redis.call('ZADD', KEYS[6], 'GT', expiresAt, key)
  for _, id in ipairs(redis.call('HKEYS', push)) do redis.call('ZADD', pushOwned, 'GT', expiresAt, key .. '\\n' .. id) end
end
redis.call('ZADD', owned, expiresAt, key)
for _, k in ipairs(ownerless) do forget(k) end
for _, k in ipairs(oldest) do forget(k) end
-- What the next save will likely forget, for the caller to declare in its first run: when this
-- save forgot expired tasks, the tasks that expire first; when it dropped the owner's own, the
-- owner's next oldest. A save that forgot nothing names nothing (and costs nothing more).
local hints = {'saved'}
local function hint(k)
  table.insert(hints, k)
  table.insert(hints, redis.call('HGET', KEYS[5], k) or '')
end
if #expired > 0 then
  for _, k in ipairs(redis.call('ZRANGE', KEYS[3], 0, ${HINTED_EXPIRIES - 1})) do hint(k) end
end
if drop > 0 then
  local nextOwn = redis.call('ZRANGE', owned, 0, 0)[1]
  if nextOwn and nextOwn ~= key then hint(nextOwn) end
end
return hints`);

/**
 * Save push config ARGV[3] = ARGV[4] of task key ARGV[2] for owner ARGV[6] at time ARGV[5], expiring
 * with its task (at ARGV[7] when the task is not saved yet); refuse beyond ARGV[8] per task or
 * ARGV[9] per owner. Declares every key: KEYS[1..7] as `SAVE`'s, KEYS[8] the task's push configs,
 * KEYS[9] the owner's, KEYS[10] those of the task's recorded owner ARGV[10] ('' = none, KEYS[10]
 * then unused), read before the script; 'retry' when that owner changed meanwhile.
 */
const SAVE_PUSH = new RedisScript(`
local key, id, now, owner = ARGV[2], ARGV[3], tonumber(ARGV[5]), ARGV[6]
local push, owned = KEYS[8], KEYS[9]
if (redis.call('HGET', KEYS[5], key) or '') ~= ARGV[10] then return 'retry' end
local pushExpiry = redis.call('ZSCORE', KEYS[6], key)
if pushExpiry and tonumber(pushExpiry) <= now then
  if ARGV[10] ~= '' then
    for _, config in ipairs(redis.call('HKEYS', push)) do redis.call('ZREM', KEYS[10], key .. '\\n' .. config) end
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

/** Runs of `SAVE` (and of `SAVE_PUSH`) at most for one save (each after another replica changed what it reads). */
const SAVE_TRIES = 8;

/** A bounded, expiring task store on Redis. */
export class RedisTaskStore implements GatewayTaskStore {
  readonly #options: RedisTaskStoreOptions;
  readonly #limits: TaskStoreLimits;
  readonly #prefix: string;
  readonly #keys: { tasks: string; saved: string; expiry: string; seq: string; owner: string; pushExpiry: string; claimed: string };
  /** The tasks (key → owner) the last save named as likely forgotten by the next one. */
  #hints = new Map<string, string>();
  #client: Redis | undefined;

  constructor(options: RedisTaskStoreOptions, limits: TaskStoreLimits) {
    this.#options = options;
    this.#limits = limits;
    const p = `${options.prefix}a2a:`;
    this.#prefix = p;
    this.#keys = { tasks: `${p}tasks`, saved: `${p}saved`, expiry: `${p}expiry`, seq: `${p}seq`, owner: `${p}owner`, pushExpiry: `${p}pushexpiry`, claimed: `${p}claimed` };
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  /**
   * Saves `task` for the caller's scope within the bounds, atomically (`SAVE`); a new task never
   * evicts another principal's. The first run declares only the task itself; when the save must
   * forget tasks it answers which (with their owners), and runs again with their keys declared,
   * `SAVE_TRIES` times at most (then 503: other replicas kept changing the store meanwhile).
   */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const client = this.#connected();
    const now = this.#now();
    const owner = ownerOf(context);
    const key = `${taskScope(context)}\n${task.id}`;
    const args = [key, JSON.stringify(Task.toJSON(task)), now + this.#limits.ttlMs, now, owner, this.#limits.maxTasks, bound(this.#limits.maxTasksPerPrincipal)];
    const self = [`${this.#prefix}owned:${owner}`, this.#scopeKey(key), `${this.#prefix}push:${key}`, `${this.#prefix}pushowned:${owner}`];
    const forgets = new Map([...this.#hints, [key, owner]]);
    for (let tries = 0; tries < SAVE_TRIES; tries++) {
      const keys = [...this.#scriptKeys(), ...self, ...[...forgets].flatMap(([k, o]) => this.#forgetKeys(k, o))];
      const [answer, ...found] = (await whileRedisAnswers(STORE, () => SAVE.run(client, keys, [...args, forgets.size, ...[...forgets].flat()]))) as string[];
      if (answer === 'full') throw tasksExhausted(this.#limits.maxTasks, Number(found[0]) - now);
      const named = new Map(Array.from({ length: found.length / 2 }, (_, i) => [found[2 * i]!, found[2 * i + 1]!] as const));
      if (answer === 'saved') {
        this.#hints = named;
        return;
      }
      for (const [k, o] of named) forgets.set(k, o);
    }
    throw storeUnavailable(STORE, 'other replicas kept changing the tasks while this one saved');
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
    for (let tries = 0; tries < SAVE_TRIES; tries++) {
      const recorded = (await whileRedisAnswers(STORE, () => client.hget(this.#keys.owner, key))) ?? '';
      const keys = [...this.#scriptKeys(), `${this.#prefix}push:${key}`, `${this.#prefix}pushowned:${owner}`, `${this.#prefix}pushowned:${recorded}`];
      const args = [this.#prefix, key, configId, json, now, owner, now + limits.ttlMs, bound(limits.maxPushConfigsPerTask), bound(limits.maxPushConfigsPerPrincipal), recorded];
      const outcome = await whileRedisAnswers(STORE, () => SAVE_PUSH.run(client, keys, args));
      if (outcome !== 'retry') return outcome as PushConfigSave;
    }
    throw storeUnavailable(STORE, 'other replicas kept changing the task while this one saved its push config');
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

  /** The keys `SAVE` forgets task `key` of `owner` ('' = none) with: its scope's, its owner's, its push configs, its owner's push configs. */
  #forgetKeys(key: string, owner: string): string[] {
    const p = this.#prefix;
    return [this.#scopeKey(key), owner === '' ? this.#keys.saved : `${p}owned:${owner}`, `${p}push:${key}`, owner === '' ? this.#keys.saved : `${p}pushowned:${owner}`];
  }

  /** The sorted set of task `key`'s scope (the saved keys for a key without one). */
  #scopeKey(key: string): string {
    const end = key.lastIndexOf('\n');
    return end < 0 ? this.#keys.saved : `${this.#prefix}scope:${key.slice(0, end)}`;
  }

  #scriptKeys(): string[] {
    const k = this.#keys;
    return [k.tasks, k.saved, k.expiry, k.seq, k.owner, k.pushExpiry, k.claimed];
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisTaskStore is not open');
    return this.#client;
  }

  #now(): number {
    return (this.#limits.now ?? Date.now)();
  }
}
