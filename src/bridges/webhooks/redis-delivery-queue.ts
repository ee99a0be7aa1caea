/**
 * The webhook delivery queue on Redis (`storage.driver: redis`), shared by every replica on one
 * prefix. Each delivery is a hash `P dq:d:{id}`; indexes: `P dq:pending`, `P dq:succeeded` and
 * `P dq:dead` sorted sets (by next attempt, resp. finish time) of members `{seq16}|{id}` (so ties
 * order by enqueue order), `P dq:inflight` the set of ids being attempted, `P dq:sub:{subscription}`
 * ids by seq, and `P dq:seq` the counter. Every state change is one Lua script: of two replicas
 * that `begin` one delivery, exactly one gets it, so no attempt runs twice at once.
 *
 * `requeueInFlight` (recovery at start) puts back every in-flight delivery of the prefix, other
 * replicas' included: until the queue has leased claims, start replicas one at a time or accept a
 * possible repeated attempt (deliveries are at-least-once; receivers de-duplicate by `webhook-id`).
 * Key names are built from the prefix inside the scripts, so Redis Cluster is not supported.
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import {
  DELIVERY_STATUSES,
  zeroCounts,
  type AttemptOutcome,
  type Delivery,
  type DeliveryPage,
  type DeliveryQueue,
  type DeliveryStatus,
  type DueDelivery,
  type NewDelivery,
  type PurgeLimits,
  type Redelivery,
} from './DeliveryQueue.ts';

/** Where the queue connects. */
export type RedisDeliveryQueueOptions = RedisStoreOptions;

/** Shared Lua: the member of a delivery in the status sorted sets, and the full removal of one. */
const HELPERS = `
local p = ARGV[1]
local function member(id) return string.format('%016d', tonumber(redis.call('HGET', p .. 'dq:d:' .. id, 'seq'))) .. '|' .. id end
local function remove(id)
  local key = p .. 'dq:d:' .. id
  local sub = redis.call('HGET', key, 'subscriptionId')
  if not sub then return 0 end
  local m = member(id)
  redis.call('ZREM', p .. 'dq:pending', m)
  redis.call('ZREM', p .. 'dq:succeeded', m)
  redis.call('ZREM', p .. 'dq:dead', m)
  redis.call('SREM', p .. 'dq:inflight', id)
  redis.call('ZREM', p .. 'dq:sub:' .. sub, id)
  redis.call('DEL', key)
  return 1
end
local function idOf(m) return string.sub(m, 18) end
`;

/** ARGV: prefix, now, then per delivery: id, subscriptionId, eventId, eventType, payload, nextAttemptMs. */
const ENQUEUE = new RedisScript(`${HELPERS}
local added = 0
for i = 3, #ARGV, 6 do
  local id = ARGV[i]
  local key = p .. 'dq:d:' .. id
  if redis.call('EXISTS', key) == 0 then
    local seq = redis.call('INCR', p .. 'dq:seq')
    redis.call('HSET', key, 'id', id, 'subscriptionId', ARGV[i + 1], 'eventId', ARGV[i + 2], 'eventType', ARGV[i + 3], 'payload', ARGV[i + 4],
      'nextAttemptMs', ARGV[i + 5], 'seq', seq, 'status', 'pending', 'attempts', 0, 'createdMs', ARGV[2], 'updatedMs', ARGV[2])
    redis.call('ZADD', p .. 'dq:pending', ARGV[i + 5], member(id))
    redis.call('ZADD', p .. 'dq:sub:' .. ARGV[i + 1], seq, id)
    added = added + 1
  end
end
return added`);

/** ARGV: prefix, now, limit, excluded subscription ids...; returns id, subscriptionId, nextAttemptMs triples. */
const DUE = new RedisScript(`${HELPERS}
local excluded = {}
for i = 4, #ARGV do excluded[ARGV[i]] = true end
local limit = tonumber(ARGV[3])
local out, found, offset = {}, 0, 0
while found < limit do
  local batch = redis.call('ZRANGEBYSCORE', p .. 'dq:pending', '-inf', ARGV[2], 'WITHSCORES', 'LIMIT', offset, 200)
  if #batch == 0 then break end
  for i = 1, #batch, 2 do
    local id = idOf(batch[i])
    local sub = redis.call('HGET', p .. 'dq:d:' .. id, 'subscriptionId')
    if sub and not excluded[sub] and found < limit then
      table.insert(out, id); table.insert(out, sub); table.insert(out, batch[i + 1])
      found = found + 1
    end
  end
  offset = offset + 200
end
return out`);

/** ARGV: prefix, id, now; returns the delivery's fields, or nil. */
const BEGIN = new RedisScript(`${HELPERS}
local key = p .. 'dq:d:' .. ARGV[2]
if redis.call('HGET', key, 'status') ~= 'pending' then return false end
redis.call('ZREM', p .. 'dq:pending', member(ARGV[2]))
redis.call('SADD', p .. 'dq:inflight', ARGV[2])
redis.call('HINCRBY', key, 'attempts', 1)
redis.call('HSET', key, 'status', 'in-flight', 'updatedMs', ARGV[3])
return redis.call('HGETALL', key)`);

/** ARGV: prefix, id, now, status, nextAttemptMs ('' = keep), uncount ('1'), lastError ('' = none), lastStatus ('' = none). */
const FINISH = new RedisScript(`${HELPERS}
local key = p .. 'dq:d:' .. ARGV[2]
if redis.call('HGET', key, 'status') ~= 'in-flight' then return 0 end
redis.call('SREM', p .. 'dq:inflight', ARGV[2])
redis.call('HSET', key, 'status', ARGV[4], 'updatedMs', ARGV[3])
if ARGV[5] ~= '' then redis.call('HSET', key, 'nextAttemptMs', ARGV[5]) end
if ARGV[6] == '1' then
  redis.call('HINCRBY', key, 'attempts', -1)
else
  if ARGV[7] ~= '' then redis.call('HSET', key, 'lastError', ARGV[7]) else redis.call('HDEL', key, 'lastError') end
  if ARGV[8] ~= '' then redis.call('HSET', key, 'lastStatus', ARGV[8]) else redis.call('HDEL', key, 'lastStatus') end
end
local m = member(ARGV[2])
if ARGV[4] == 'pending' then redis.call('ZADD', p .. 'dq:pending', redis.call('HGET', key, 'nextAttemptMs'), m)
else redis.call('ZADD', p .. 'dq:' .. ARGV[4], ARGV[3], m) end
return 1`);

/** ARGV: prefix, subscriptionId, id, now; returns the outcome, then the delivery's fields (none when absent). */
const REDELIVER = new RedisScript(`${HELPERS}
local key = p .. 'dq:d:' .. ARGV[3]
if redis.call('HGET', key, 'subscriptionId') ~= ARGV[2] then return {'absent'} end
local status = redis.call('HGET', key, 'status')
if status == 'succeeded' or status == 'dead' then
  local m = member(ARGV[3])
  redis.call('ZREM', p .. 'dq:' .. status, m)
  redis.call('HSET', key, 'status', 'pending', 'attempts', 0, 'nextAttemptMs', ARGV[4], 'updatedMs', ARGV[4])
  redis.call('ZADD', p .. 'dq:pending', ARGV[4], m)
  status = 'redelivered'
else
  status = 'busy'
end
local out = redis.call('HGETALL', key)
table.insert(out, 1, status)
return out`);

/** ARGV: prefix, now. */
const REQUEUE = new RedisScript(`${HELPERS}
local ids = redis.call('SMEMBERS', p .. 'dq:inflight')
for _, id in ipairs(ids) do
  redis.call('HSET', p .. 'dq:d:' .. id, 'status', 'pending', 'nextAttemptMs', ARGV[2], 'updatedMs', ARGV[2])
  redis.call('ZADD', p .. 'dq:pending', ARGV[2], member(id))
end
redis.call('DEL', p .. 'dq:inflight')
return #ids`);

/** ARGV: prefix, subscriptionId, only pending ('1') or all. */
const DELETE_OF = new RedisScript(`${HELPERS}
local removed = 0
for _, id in ipairs(redis.call('ZRANGE', p .. 'dq:sub:' .. ARGV[2], 0, -1)) do
  if ARGV[3] ~= '1' or redis.call('HGET', p .. 'dq:d:' .. id, 'status') == 'pending' then removed = removed + remove(id) end
end
return removed`);

/** ARGV: prefix, subscriptionId, after, limit + 1, status ('' = any); returns up to limit + 1 ids in seq order. */
const LIST = new RedisScript(`${HELPERS}
local out, offset, wanted = {}, 0, tonumber(ARGV[4])
while #out < wanted do
  local batch = redis.call('ZRANGEBYSCORE', p .. 'dq:sub:' .. ARGV[2], '(' .. ARGV[3], '+inf', 'LIMIT', offset, 200)
  if #batch == 0 then break end
  for _, id in ipairs(batch) do
    if #out < wanted and (ARGV[5] == '' or redis.call('HGET', p .. 'dq:d:' .. id, 'status') == ARGV[5]) then table.insert(out, id) end
  end
  offset = offset + 200
end
return out`);

/** ARGV: prefix, succeededBeforeMs, deadBeforeMs, maxDead. */
const PURGE = new RedisScript(`${HELPERS}
local removed = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', p .. 'dq:succeeded', '-inf', '(' .. ARGV[2])) do removed = removed + remove(idOf(m)) end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', p .. 'dq:dead', '-inf', '(' .. ARGV[3])) do removed = removed + remove(idOf(m)) end
local excess = redis.call('ZCARD', p .. 'dq:dead') - tonumber(ARGV[4])
if excess > 0 then
  for _, m in ipairs(redis.call('ZRANGE', p .. 'dq:dead', 0, excess - 1)) do removed = removed + remove(idOf(m)) end
end
return removed`);

const STORE = 'the delivery queue (Redis)';

/** A `DeliveryQueue` on Redis. */
export class RedisDeliveryQueue implements DeliveryQueue {
  readonly #options: RedisDeliveryQueueOptions;
  readonly #p: string;
  #client: Redis | undefined;

  constructor(options: RedisDeliveryQueueOptions) {
    this.#options = options;
    this.#p = options.prefix;
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    this.#client ??= await connectStore(this.#options);
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    if (deliveries.length === 0) return 0;
    const args = deliveries.flatMap((d) => [d.id, d.subscriptionId, d.eventId, d.eventType, d.payload, d.nextAttemptMs]);
    return Number(await this.#run(ENQUEUE, [nowMs, ...args]));
  }

  async due(nowMs: number, limit: number, excludeSubscriptions: string[]): Promise<DueDelivery[]> {
    if (limit <= 0) return [];
    const flat = (await this.#run(DUE, [nowMs, Math.floor(limit), ...excludeSubscriptions])) as string[];
    const due: DueDelivery[] = [];
    for (let i = 0; i < flat.length; i += 3) due.push({ id: flat[i]!, subscriptionId: flat[i + 1]!, nextAttemptMs: Number(flat[i + 2]) });
    return due;
  }

  async begin(id: string, nowMs: number): Promise<Delivery | undefined> {
    const fields = (await this.#run(BEGIN, [id, nowMs])) as string[] | null;
    return fields ? toDelivery(fields) : undefined;
  }

  async finish(id: string, outcome: AttemptOutcome, nowMs: number): Promise<boolean> {
    const args = [id, nowMs, outcome.status, outcome.nextAttemptMs ?? '', outcome.uncount ? '1' : '', outcome.lastError ?? '', outcome.lastStatus ?? ''];
    return Number(await this.#run(FINISH, args)) === 1;
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    const [outcome, ...fields] = (await this.#run(REDELIVER, [subscriptionId, id, nowMs])) as string[];
    if (outcome === 'absent') return { outcome };
    return { outcome: outcome as 'redelivered' | 'busy', delivery: toDelivery(fields) };
  }

  async requeueInFlight(nowMs: number): Promise<number> {
    return Number(await this.#run(REQUEUE, [nowMs]));
  }

  async nextDueMs(): Promise<number | undefined> {
    const client = this.#connected();
    const first = await whileRedisAnswers(STORE, () => client.zrange(`${this.#p}dq:pending`, '0', '0', 'WITHSCORES'));
    return first.length === 0 ? undefined : Number(first[1]);
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    return Number(await this.#run(DELETE_OF, [subscriptionId, '1']));
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    return Number(await this.#run(DELETE_OF, [subscriptionId, '']));
  }

  async list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage> {
    const ids = (await this.#run(LIST, [subscriptionId, options.after, options.limit + 1, options.status ?? ''])) as string[];
    const client = this.#connected();
    const rows = await whileRedisAnswers(STORE, () => Promise.all(ids.slice(0, options.limit).map((id) => client.hgetall(`${this.#p}dq:d:${id}`))));
    const deliveries = rows.filter((row) => row.id !== undefined).map((row) => toDelivery(Object.entries(row).flat()));
    return ids.length > options.limit && deliveries.length > 0 ? { deliveries, next: deliveries[deliveries.length - 1]!.seq } : { deliveries };
  }

  async counts(): Promise<Record<DeliveryStatus, number>> {
    const client = this.#connected();
    const p = this.#p;
    const [pending, inFlight, succeeded, dead] = await whileRedisAnswers(STORE, () =>
      Promise.all([client.zcard(`${p}dq:pending`), client.scard(`${p}dq:inflight`), client.zcard(`${p}dq:succeeded`), client.zcard(`${p}dq:dead`)]),
    );
    return { ...zeroCounts(), pending, 'in-flight': inFlight, succeeded, dead };
  }

  async purge(limits: PurgeLimits): Promise<number> {
    return Number(await this.#run(PURGE, [limits.succeededBeforeMs, limits.deadBeforeMs, Math.max(0, limits.maxDead)]));
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  async #run(script: RedisScript, args: Array<string | number>): Promise<unknown> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => script.run(client, [], [this.#p, ...args]));
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisDeliveryQueue is not open');
    return this.#client;
  }
}

/** A delivery from its hash fields (a flat name, value list). */
function toDelivery(fields: string[]): Delivery {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  const status = f.status as DeliveryStatus;
  if (!DELIVERY_STATUSES.includes(status)) throw new Error(`delivery ${f.id} has an unknown status`);
  return {
    id: f.id!, subscriptionId: f.subscriptionId!, eventId: f.eventId!, eventType: f.eventType!, payload: f.payload!,
    nextAttemptMs: Number(f.nextAttemptMs), seq: Number(f.seq), status, attempts: Number(f.attempts),
    createdMs: Number(f.createdMs), updatedMs: Number(f.updatedMs),
    ...(f.lastError !== undefined && { lastError: f.lastError }),
    ...(f.lastStatus !== undefined && { lastStatus: Number(f.lastStatus) }),
  };
}
