/**
 * The webhook delivery queue on Redis (`storage.driver: redis`), shared by every replica on one
 * prefix. Each delivery is a hash `P dq:d:{id}`. Per subscription: `P dq:due:{sub}` its pending
 * deliveries and `P dq:lease:{sub}` its in-flight ones, sorted sets (by next attempt, resp. lease
 * end) of members `{seq16}|{id}` (ties order by enqueue order), and `P dq:sub:{sub}` its ids by seq.
 * The due index is `P dq:ready`: subscriptions by when they can next give work (`DeliveryQueue`), so
 * a claim reads ready subscriptions and seeks into each, never walking a backlog. Also `P dq:succeeded`
 * and `P dq:dead` (by finish time), `P dq:n` (pending and in-flight counts) and `P dq:seq`.
 *
 * Every state change is one Lua script, so a claim is atomic across replicas: of two replicas
 * claiming at once, never both get one delivery, and the `PER_SUBSCRIPTION` cap holds for both
 * together. A killed replica's claims come back when their lease ends. Key names are built from the
 * prefix inside the scripts (each names `P dq:seq` in `KEYS` so a Redis Cluster runs it on the
 * prefix's slot, where every key of the tagged prefix lives).
 *
 * Every time the queue keeps (due times, lease ends, created and updated times) is in Redis's clock
 * (`RedisClock`, learnt from `TIME` at open and in every claim): a replica whose clock runs ahead
 * never takes another's live lease for ended, and all replicas list the same times. Callers pass
 * and get back times of their own clock.
 */
import type { Redis } from 'ioredis';
import { RedisClock } from '../../storage/redis-clock.ts';
import { closeRedis, connectStore, type RedisStoreOptions } from '../../storage/redis.ts';
import { whileRedisAnswers } from '../../storage/redis-errors.ts';
import { RedisScript } from '../../storage/redis-script.ts';
import {
  DELIVERY_STATUSES,
  PER_SUBSCRIPTION,
  releaseByFinish,
  zeroCounts,
  type ClaimedDelivery,
  type ClaimRef,
  type Delivery,
  type DeliveryPage,
  type DeliveryQueue,
  type DeliveryStatus,
  type FinishedAttempt,
  type NewDelivery,
  type PurgeLimits,
  type Redelivery,
  type Settlement,
} from './DeliveryQueue.ts';

/** Where the queue connects. */
export interface RedisDeliveryQueueOptions extends RedisStoreOptions {
  /** This process's clock, epoch ms, translated into Redis's for every stored time; default `Date.now` (tests skew it). */
  clock?: () => number;
}

/**
 * Shared Lua: ARGV[1] is the prefix, ARGV[2] the time (ms). `lane` sets when a subscription can
 * next give work (at the cap: its first live lease end; else its first due time or lease end);
 * `remove` deletes one delivery from every index.
 */
const HELPERS = `
local p = ARGV[1]
local now = tonumber(ARGV[2])
local PER = ${PER_SUBSCRIPTION}
local function member(id) return string.format('%016d', tonumber(redis.call('HGET', p .. 'dq:d:' .. id, 'seq'))) .. '|' .. id end
local function idOf(m) return string.sub(m, 18) end
local function lane(sub)
  local leases = p .. 'dq:lease:' .. sub
  local at
  if redis.call('ZCOUNT', leases, '(' .. now, '+inf') >= PER then
    at = redis.call('ZRANGEBYSCORE', leases, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
  else
    local lease = redis.call('ZRANGE', leases, 0, 0, 'WITHSCORES')[2]
    local head = redis.call('ZRANGE', p .. 'dq:due:' .. sub, 0, 0, 'WITHSCORES')[2]
    if lease and head then at = (tonumber(lease) < tonumber(head)) and lease or head else at = lease or head end
  end
  if at then redis.call('ZADD', p .. 'dq:ready', at, sub) else redis.call('ZREM', p .. 'dq:ready', sub) end
end
local function remove(id)
  local key = p .. 'dq:d:' .. id
  local sub = redis.call('HGET', key, 'subscriptionId')
  if not sub then return 0 end
  local m = member(id)
  local status = redis.call('HGET', key, 'status')
  if status == 'pending' or status == 'in-flight' then redis.call('HINCRBY', p .. 'dq:n', status, -1) end
  redis.call('ZREM', p .. 'dq:due:' .. sub, m)
  redis.call('ZREM', p .. 'dq:lease:' .. sub, m)
  redis.call('ZREM', p .. 'dq:succeeded', m)
  redis.call('ZREM', p .. 'dq:dead', m)
  redis.call('ZREM', p .. 'dq:sub:' .. sub, id)
  redis.call('DEL', key)
  return 1
end
`;

/** ARGV: prefix, now, then per delivery: id, subscriptionId, eventId, eventType, payload, nextAttemptMs. */
const ENQUEUE = new RedisScript(`${HELPERS}
local added, touched = 0, {}
for i = 3, #ARGV, 6 do
  local id, sub = ARGV[i], ARGV[i + 1]
  local key = p .. 'dq:d:' .. id
  if redis.call('EXISTS', key) == 0 then
    local seq = redis.call('INCR', p .. 'dq:seq')
    redis.call('HSET', key, 'id', id, 'subscriptionId', sub, 'eventId', ARGV[i + 2], 'eventType', ARGV[i + 3], 'payload', ARGV[i + 4],
      'nextAttemptMs', ARGV[i + 5], 'seq', seq, 'status', 'pending', 'attempts', 0, 'claim', 0, 'createdMs', ARGV[2], 'updatedMs', ARGV[2])
    redis.call('ZADD', p .. 'dq:due:' .. sub, ARGV[i + 5], member(id))
    redis.call('ZADD', p .. 'dq:sub:' .. sub, seq, id)
    touched[sub] = true
    added = added + 1
  end
end
redis.call('HINCRBY', p .. 'dq:n', 'pending', added)
for sub in pairs(touched) do lane(sub) end
return added`);

/**
 * Lua `claimUpTo(limit, leaseUntil)`: claims as `claim` does; returns per claimed delivery
 * { reclaimed (1/0), hash fields... }. Each ready lane read gives at least one delivery or moves
 * past now, so the loop ends.
 */
const CLAIM_FN = `
local function claimUpTo(limit, leaseUntil)
  local out = {}
  local function take(sub, m, reclaimed)
    local id = idOf(m)
    local key = p .. 'dq:d:' .. id
    if reclaimed == 0 then
      redis.call('ZREM', p .. 'dq:due:' .. sub, m)
      redis.call('HINCRBY', p .. 'dq:n', 'pending', -1)
      redis.call('HINCRBY', p .. 'dq:n', 'in-flight', 1)
    end
    redis.call('ZADD', p .. 'dq:lease:' .. sub, leaseUntil, m)
    redis.call('HINCRBY', key, 'attempts', 1)
    redis.call('HINCRBY', key, 'claim', 1)
    redis.call('HSET', key, 'status', 'in-flight', 'leaseUntilMs', leaseUntil, 'updatedMs', ARGV[2])
    local fields = redis.call('HGETALL', key)
    table.insert(fields, 1, reclaimed)
    table.insert(out, fields)
  end
  while #out < limit do
    local lanes = redis.call('ZRANGEBYSCORE', p .. 'dq:ready', '-inf', now, 'LIMIT', 0, limit - #out)
    if #lanes == 0 then break end
    local before = #out
    for _, sub in ipairs(lanes) do
      local leases = p .. 'dq:lease:' .. sub
      local free = math.min(PER - redis.call('ZCOUNT', leases, '(' .. now, '+inf'), limit - #out)
      if free > 0 then
        local expired = redis.call('ZRANGEBYSCORE', leases, '-inf', now, 'LIMIT', 0, free)
        local due = {}
        if free > #expired then due = redis.call('ZRANGEBYSCORE', p .. 'dq:due:' .. sub, '-inf', now, 'LIMIT', 0, free - #expired) end
        for _, m in ipairs(expired) do take(sub, m, 1) end
        for _, m in ipairs(due) do take(sub, m, 0) end
      end
      lane(sub)
    end
    if #out == before then break end
  end
  return out
end
`;

/**
 * Lua `finishAll(from)`: records the attempts in ARGV[from..], 7 each: id, claim, status,
 * nextAttemptMs ('' = keep), uncount ('1'), lastError ('' = none), lastStatus ('' = none). Returns
 * 1 (recorded) or 0 (not the current claim) per attempt.
 */
const FINISH_FN = `
local function finishAll(from)
  local out, touched = {}, {}
  for i = from, #ARGV, 7 do
    local id = ARGV[i]
    local key = p .. 'dq:d:' .. id
    local state = redis.call('HMGET', key, 'status', 'claim', 'subscriptionId')
    if state[1] ~= 'in-flight' or state[2] ~= ARGV[i + 1] then
      table.insert(out, 0)
    else
      local sub, status, m = state[3], ARGV[i + 2], member(id)
      redis.call('ZREM', p .. 'dq:lease:' .. sub, m)
      redis.call('HINCRBY', p .. 'dq:n', 'in-flight', -1)
      redis.call('HDEL', key, 'leaseUntilMs')
      redis.call('HSET', key, 'status', status, 'updatedMs', ARGV[2])
      if ARGV[i + 3] ~= '' then redis.call('HSET', key, 'nextAttemptMs', ARGV[i + 3]) end
      if ARGV[i + 4] == '1' then
        redis.call('HINCRBY', key, 'attempts', -1)
      else
        if ARGV[i + 5] ~= '' then redis.call('HSET', key, 'lastError', ARGV[i + 5]) else redis.call('HDEL', key, 'lastError') end
        if ARGV[i + 6] ~= '' then redis.call('HSET', key, 'lastStatus', ARGV[i + 6]) else redis.call('HDEL', key, 'lastStatus') end
      end
      if status == 'pending' then
        redis.call('ZADD', p .. 'dq:due:' .. sub, redis.call('HGET', key, 'nextAttemptMs'), m)
        redis.call('HINCRBY', p .. 'dq:n', 'pending', 1)
      else
        redis.call('ZADD', p .. 'dq:' .. status, ARGV[2], m)
      end
      touched[sub] = true
      table.insert(out, 1)
    end
  end
  for sub in pairs(touched) do lane(sub) end
  return out
end
`;

/** ARGV: prefix, now, limit, leaseMs; returns { claimed, Redis's TIME seconds, microseconds }. */
const CLAIM = new RedisScript(`${HELPERS}${CLAIM_FN}
local time = redis.call('TIME')
return { claimUpTo(tonumber(ARGV[3]), now + tonumber(ARGV[4])), time[1], time[2] }`);

/** ARGV: prefix, now, then the attempts (see `FINISH_FN`). */
const FINISH = new RedisScript(`${HELPERS}${FINISH_FN}
return finishAll(3)`);

/** ARGV: prefix, now, limit, leaseMs, then the attempts (see `FINISH_FN`); returns { recorded, claimed, TIME seconds, microseconds }. */
const SETTLE = new RedisScript(`${HELPERS}${FINISH_FN}${CLAIM_FN}
local recorded = finishAll(5)
local time = redis.call('TIME')
return { recorded, claimUpTo(tonumber(ARGV[3]), now + tonumber(ARGV[4])), time[1], time[2] }`);

/** ARGV: prefix, now, subscriptionId, id; returns the outcome, then the delivery's fields (none when absent). */
const REDELIVER = new RedisScript(`${HELPERS}
local key = p .. 'dq:d:' .. ARGV[4]
if redis.call('HGET', key, 'subscriptionId') ~= ARGV[3] then return {'absent'} end
local status = redis.call('HGET', key, 'status')
if status == 'succeeded' or status == 'dead' then
  local m = member(ARGV[4])
  redis.call('ZREM', p .. 'dq:' .. status, m)
  redis.call('HSET', key, 'status', 'pending', 'attempts', 0, 'nextAttemptMs', ARGV[2], 'updatedMs', ARGV[2])
  redis.call('ZADD', p .. 'dq:due:' .. ARGV[3], ARGV[2], m)
  redis.call('HINCRBY', p .. 'dq:n', 'pending', 1)
  lane(ARGV[3])
  status = 'redelivered'
else
  status = 'busy'
end
local out = redis.call('HGETALL', key)
table.insert(out, 1, status)
return out`);

/** ARGV: prefix, now, subscriptionId, only pending ('1') or all. */
const DELETE_OF = new RedisScript(`${HELPERS}
local removed = 0
local sub = ARGV[3]
if ARGV[4] == '1' then
  for _, m in ipairs(redis.call('ZRANGE', p .. 'dq:due:' .. sub, 0, -1)) do removed = removed + remove(idOf(m)) end
else
  for _, id in ipairs(redis.call('ZRANGE', p .. 'dq:sub:' .. sub, 0, -1)) do removed = removed + remove(id) end
end
lane(sub)
return removed`);

/** ARGV: prefix, now (unused), subscriptionId, after, limit + 1, status ('' = any); returns up to limit + 1 ids in seq order. */
const LIST = new RedisScript(`${HELPERS}
local out, offset, wanted = {}, 0, tonumber(ARGV[5])
while #out < wanted do
  local batch = redis.call('ZRANGEBYSCORE', p .. 'dq:sub:' .. ARGV[3], '(' .. ARGV[4], '+inf', 'LIMIT', offset, 200)
  if #batch == 0 then break end
  for _, id in ipairs(batch) do
    if #out < wanted and (ARGV[6] == '' or redis.call('HGET', p .. 'dq:d:' .. id, 'status') == ARGV[6]) then table.insert(out, id) end
  end
  offset = offset + 200
end
return out`);

/**
 * ARGV: prefix, now. Moves a queue written before leased claims (one `P dq:pending` sorted set and a
 * `P dq:inflight` set) into the per-subscription layout: pending ones into their subscription's due
 * set, in-flight ones under an ended lease (claimable at once, as a stop's were). Idempotent: does
 * nothing when neither old key exists. Returns how many deliveries it moved.
 */
const MIGRATE = new RedisScript(`${HELPERS}
local moved, touched = 0, {}
local function move(id, zset, score)
  local sub = redis.call('HGET', p .. 'dq:d:' .. id, 'subscriptionId')
  if not sub then return end
  redis.call('ZADD', p .. 'dq:' .. zset .. ':' .. sub, score, member(id))
  touched[sub] = true
  moved = moved + 1
end
local pending = redis.call('ZRANGE', p .. 'dq:pending', 0, -1, 'WITHSCORES')
for i = 1, #pending, 2 do move(idOf(pending[i]), 'due', pending[i + 1]) end
local inflight = redis.call('SMEMBERS', p .. 'dq:inflight')
for _, id in ipairs(inflight) do
  move(id, 'lease', 0)
  redis.call('HSET', p .. 'dq:d:' .. id, 'leaseUntilMs', 0)
end
if #pending > 0 or #inflight > 0 then
  redis.call('HINCRBY', p .. 'dq:n', 'pending', #pending / 2)
  redis.call('HINCRBY', p .. 'dq:n', 'in-flight', #inflight)
end
redis.call('DEL', p .. 'dq:pending', p .. 'dq:inflight')
for sub in pairs(touched) do lane(sub) end
return moved`);

/** ARGV: prefix, now (unused), succeededBeforeMs, deadBeforeMs, maxDead. */
const PURGE = new RedisScript(`${HELPERS}
local removed = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', p .. 'dq:succeeded', '-inf', '(' .. ARGV[3])) do removed = removed + remove(idOf(m)) end
for _, m in ipairs(redis.call('ZRANGEBYSCORE', p .. 'dq:dead', '-inf', '(' .. ARGV[4])) do removed = removed + remove(idOf(m)) end
local excess = redis.call('ZCARD', p .. 'dq:dead') - tonumber(ARGV[5])
if excess > 0 then
  for _, m in ipairs(redis.call('ZRANGE', p .. 'dq:dead', 0, excess - 1)) do removed = removed + remove(idOf(m)) end
end
return removed`);

const STORE = 'the delivery queue (Redis)';

/** A `DeliveryQueue` on Redis. */
export class RedisDeliveryQueue implements DeliveryQueue {
  readonly #options: RedisDeliveryQueueOptions;
  readonly #p: string;
  readonly #clock: RedisClock;
  #client: Redis | undefined;

  constructor(options: RedisDeliveryQueueOptions) {
    this.#options = options;
    this.#p = options.prefix;
    this.#clock = new RedisClock(options.clock);
  }

  /** Connects, learns Redis's clock, and moves a queue written before leased claims into the current layout. Idempotent. */
  async open(): Promise<void> {
    if (this.#client) return;
    const { clock: _clock, ...options } = this.#options;
    const client = await connectStore(options);
    this.#client = client;
    try {
      await this.#clock.measure(() => client.time(), true);
      await this.#run(MIGRATE, this.#clock.now(), []);
    } catch (err) {
      this.#client = undefined;
      await closeRedis(client);
      throw err;
    }
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    if (deliveries.length === 0) return 0;
    const args = deliveries.flatMap((d) => [d.id, d.subscriptionId, d.eventId, d.eventType, d.payload, this.#clock.toRedis(d.nextAttemptMs)]);
    return Number(await this.#run(ENQUEUE, nowMs, args));
  }

  async claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    const before = this.#clock.now();
    const [claimed, seconds, micros] = (await this.#run(CLAIM, nowMs, [Math.floor(limit), leaseMs])) as [unknown, string, string];
    this.#learn(seconds, micros, before);
    return this.#claimed(claimed);
  }

  async finish(attempts: FinishedAttempt[], nowMs: number): Promise<boolean[]> {
    if (attempts.length === 0) return [];
    return toRecorded(await this.#run(FINISH, nowMs, this.#attemptArgs(attempts)));
  }

  async settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement> {
    const before = this.#clock.now();
    const [recorded, claimed, seconds, micros] = (await this.#run(SETTLE, nowMs, [Math.max(0, Math.floor(limit)), leaseMs, ...this.#attemptArgs(attempts)])) as [unknown, unknown, string, string];
    this.#learn(seconds, micros, before);
    return { recorded: toRecorded(recorded), claimed: this.#claimed(claimed) };
  }

  release(claims: ClaimRef[], nowMs: number): Promise<number> {
    return releaseByFinish(this, claims, nowMs);
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    const [outcome, ...fields] = (await this.#run(REDELIVER, nowMs, [subscriptionId, id])) as string[];
    if (outcome === 'absent') return { outcome };
    return { outcome: outcome as 'redelivered' | 'busy', delivery: this.#delivery(fields) };
  }

  async nextDueMs(): Promise<number | undefined> {
    const client = this.#connected();
    const first = await whileRedisAnswers(STORE, () => client.zrange(`${this.#p}dq:ready`, '0', '0', 'WITHSCORES'));
    return first.length === 0 ? undefined : this.#clock.fromRedis(Number(first[1]));
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    return Number(await this.#run(DELETE_OF, this.#clock.now(), [subscriptionId, '1']));
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    return Number(await this.#run(DELETE_OF, this.#clock.now(), [subscriptionId, '']));
  }

  async list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage> {
    const ids = (await this.#run(LIST, 0, [subscriptionId, options.after, options.limit + 1, options.status ?? ''])) as string[];
    const client = this.#connected();
    const rows = await whileRedisAnswers(STORE, () => Promise.all(ids.slice(0, options.limit).map((id) => client.hgetall(`${this.#p}dq:d:${id}`))));
    const deliveries = rows.filter((row) => row.id !== undefined).map((row) => this.#delivery(Object.entries(row).flat()));
    return ids.length > options.limit && deliveries.length > 0 ? { deliveries, next: deliveries[deliveries.length - 1]!.seq } : { deliveries };
  }

  async counts(): Promise<Record<DeliveryStatus, number>> {
    const client = this.#connected();
    const p = this.#p;
    const [[pending, inFlight], succeeded, dead] = await whileRedisAnswers(STORE, () =>
      Promise.all([client.hmget(`${p}dq:n`, 'pending', 'in-flight'), client.zcard(`${p}dq:succeeded`), client.zcard(`${p}dq:dead`)]),
    );
    return { ...zeroCounts(), pending: Number(pending ?? 0), 'in-flight': Number(inFlight ?? 0), succeeded, dead };
  }

  async unfinished(): Promise<number> {
    const client = this.#connected();
    const [pending, inFlight] = await whileRedisAnswers(STORE, () => client.hmget(`${this.#p}dq:n`, 'pending', 'in-flight'));
    return Number(pending ?? 0) + Number(inFlight ?? 0);
  }

  async purge(limits: PurgeLimits): Promise<number> {
    return Number(await this.#run(PURGE, 0, [this.#clock.toRedis(limits.succeededBeforeMs), this.#clock.toRedis(limits.deadBeforeMs), Math.max(0, limits.maxDead)]));
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  /** Runs `script` with the prefix and `nowMs` in Redis's clock (ARGV[1], ARGV[2]) before `args`. */
  async #run(script: RedisScript, nowMs: number, args: Array<string | number>): Promise<unknown> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => script.run(client, [`${this.#p}dq:seq`], [this.#p, this.#clock.toRedis(nowMs), ...args]));
  }

  /** Learns the clock offset from a script's `TIME` (read between `before` and now, this process's clock). */
  #learn(seconds: string, micros: string, before: number): void {
    this.#clock.observe(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), before, this.#clock.now());
  }

  /** The script arguments of finished attempts (see `FINISH_FN`), their next attempt in Redis's clock. */
  #attemptArgs(attempts: FinishedAttempt[]): Array<string | number> {
    return attempts.flatMap(({ id, claim, outcome }) => [
      id, claim, outcome.status, outcome.nextAttemptMs === undefined ? '' : this.#clock.toRedis(outcome.nextAttemptMs),
      outcome.uncount ? '1' : '', outcome.lastError ?? '', outcome.lastStatus ?? '',
    ]);
  }

  /** `claimUpTo`'s reply as `claim` answers, in this process's clock. */
  #claimed(reply: unknown): ClaimedDelivery[] {
    return (reply as Array<[number, ...string[]]>).map(([reclaimed, ...fields]) => {
      const f = fieldsOf(fields);
      return { ...this.#delivery(fields), claim: Number(f.claim), leaseUntilMs: this.#clock.fromRedis(Number(f.leaseUntilMs)), reclaimed: reclaimed === 1 };
    });
  }

  /** A delivery from its hash fields, its times in this process's clock. */
  #delivery(fields: string[]): Delivery {
    const d = toDelivery(fields);
    const local = (ms: number) => this.#clock.fromRedis(ms);
    return { ...d, nextAttemptMs: local(d.nextAttemptMs), createdMs: local(d.createdMs), updatedMs: local(d.updatedMs) };
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisDeliveryQueue is not open');
    return this.#client;
  }
}

/** `finishAll`'s reply as `finish` answers. */
function toRecorded(reply: unknown): boolean[] {
  return (reply as number[]).map((recorded) => recorded === 1);
}

/** Hash fields (a flat name, value list) as a record. */
function fieldsOf(fields: string[]): Record<string, string> {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  return f;
}

/** A delivery from its hash fields (a flat name, value list). */
function toDelivery(fields: string[]): Delivery {
  const f = fieldsOf(fields);
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
