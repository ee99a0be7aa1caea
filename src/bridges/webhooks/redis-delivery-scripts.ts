/**
 * The Lua scripts of the Redis delivery queue (`redis-delivery-queue.ts`, which describes the keys).
 * Every script declares every key it touches in `KEYS` (issue 23, item 9: ready for a Redis
 * Cluster), in one layout: the fixed keys (`FIXED`, in that order), then one hash per declared
 * delivery, then three sorted sets per declared subscription (due, lease, ids). `ARGV[1]` is the
 * time (Redis's clock, ms), then the declared delivery ids (a count, then the ids), then the declared
 * subscription ids (a count, then the ids), then the script's own arguments from `ARGV[a]`. A script
 * finds a delivery's hash as `D[id]` and a subscription's sets as `S[sub]`, built from those lists:
 * no key name is made inside a script. A delivery or subscription a script meets that the caller
 * did not declare (the state changed since the caller read it) is left alone, and the script says so
 * (see each), so the caller reads again and runs the rest.
 */
import { PER_SUBSCRIPTION } from './DeliveryQueue.ts';
import { RedisScript } from '../../storage/redis-script.ts';

/** The keys (after the prefix) every script declares first, in this order. */
export const FIXED = ['dq:seq', 'dq:ready', 'dq:n', 'dq:succeeded', 'dq:dead', 'dq:pending', 'dq:inflight'] as const;

/** The three keys (after the prefix) of one subscription, in the order a script expects them. */
export function subscriptionKeys(sub: string): string[] {
  return [`dq:due:${sub}`, `dq:lease:${sub}`, `dq:sub:${sub}`];
}

/**
 * Shared Lua. `lane` sets when a subscription can next give work (at the cap: its first live lease
 * end; else its first due time or lease end); `remove` deletes one delivery from every index and
 * answers 1, 0 (no such delivery) or nil (the delivery or its subscription is not declared: left).
 */
const HELPERS = `
local now = tonumber(ARGV[1])
local PER = ${PER_SUBSCRIPTION}
local seqKey, ready, counts, pendingOld, inflightOld = KEYS[1], KEYS[2], KEYS[3], KEYS[6], KEYS[7]
local finished = { succeeded = KEYS[4], dead = KEYS[5] }
local D, S = {}, {}
local ki, a = ${FIXED.length + 1}, 3
for _ = 1, tonumber(ARGV[2]) do D[ARGV[a]] = KEYS[ki]; a = a + 1; ki = ki + 1 end
local subCount = tonumber(ARGV[a]); a = a + 1
for _ = 1, subCount do S[ARGV[a]] = { due = KEYS[ki], lease = KEYS[ki + 1], ids = KEYS[ki + 2] }; a = a + 1; ki = ki + 3 end
local function member(id) return string.format('%016d', tonumber(redis.call('HGET', D[id], 'seq'))) .. '|' .. id end
local function idOf(m) return string.sub(m, 18) end
local function lane(sub)
  local s = S[sub]
  local at
  if redis.call('ZCOUNT', s.lease, '(' .. now, '+inf') >= PER then
    at = redis.call('ZRANGEBYSCORE', s.lease, '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)[2]
  else
    local lease = redis.call('ZRANGE', s.lease, 0, 0, 'WITHSCORES')[2]
    local head = redis.call('ZRANGE', s.due, 0, 0, 'WITHSCORES')[2]
    if lease and head then at = (tonumber(lease) < tonumber(head)) and lease or head else at = lease or head end
  end
  if at then redis.call('ZADD', ready, at, sub) else redis.call('ZREM', ready, sub) end
end
local function remove(id)
  local key = D[id]
  if not key then return nil end
  local sub = redis.call('HGET', key, 'subscriptionId')
  if not sub then return 0 end
  local s = S[sub]
  if not s then return nil end
  local m = member(id)
  local status = redis.call('HGET', key, 'status')
  if status == 'pending' or status == 'in-flight' then redis.call('HINCRBY', counts, status, -1) end
  redis.call('ZREM', s.due, m)
  redis.call('ZREM', s.lease, m)
  redis.call('ZREM', finished.succeeded, m)
  redis.call('ZREM', finished.dead, m)
  redis.call('ZREM', s.ids, id)
  redis.call('DEL', key)
  return 1
end
`;

/** Arguments: per delivery id, subscriptionId, eventId, eventType, payload, nextAttemptMs (each declared). */
export const ENQUEUE = new RedisScript(`${HELPERS}
local added, touched = 0, {}
for i = a, #ARGV, 6 do
  local id, sub = ARGV[i], ARGV[i + 1]
  local key, s = D[id], S[sub]
  if redis.call('EXISTS', key) == 0 then
    local seq = redis.call('INCR', seqKey)
    redis.call('HSET', key, 'id', id, 'subscriptionId', sub, 'eventId', ARGV[i + 2], 'eventType', ARGV[i + 3], 'payload', ARGV[i + 4],
      'nextAttemptMs', ARGV[i + 5], 'seq', seq, 'status', 'pending', 'attempts', 0, 'claim', 0, 'createdMs', ARGV[1], 'updatedMs', ARGV[1])
    redis.call('ZADD', s.due, ARGV[i + 5], member(id))
    redis.call('ZADD', s.ids, seq, id)
    touched[sub] = true
    added = added + 1
  end
end
redis.call('HINCRBY', counts, 'pending', added)
for sub in pairs(touched) do lane(sub) end
return added`);

/**
 * Lua `claimUpTo(limit, leaseUntil)`: claims as `claim` does; returns the claimed deliveries
 * ({ reclaimed (1/0), hash fields... } each) and 1, or 0 when it stopped at a subscription or a
 * delivery that is not declared (before touching it: what it claimed stands, the caller claims the
 * rest after reading again). Each ready lane read gives at least one delivery or moves past now, so
 * the loop ends.
 */
const CLAIM_FN = `
local function claimUpTo(limit, leaseUntil)
  local out = {}
  local function take(s, m, reclaimed)
    local key = D[idOf(m)]
    if reclaimed == 0 then
      redis.call('ZREM', s.due, m)
      redis.call('HINCRBY', counts, 'pending', -1)
      redis.call('HINCRBY', counts, 'in-flight', 1)
    end
    redis.call('ZADD', s.lease, leaseUntil, m)
    redis.call('HINCRBY', key, 'attempts', 1)
    redis.call('HINCRBY', key, 'claim', 1)
    redis.call('HSET', key, 'status', 'in-flight', 'leaseUntilMs', leaseUntil, 'updatedMs', ARGV[1])
    local fields = redis.call('HGETALL', key)
    table.insert(fields, 1, reclaimed)
    table.insert(out, fields)
  end
  while #out < limit do
    local lanes = redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, limit - #out)
    if #lanes == 0 then break end
    local before = #out
    for _, sub in ipairs(lanes) do
      local s = S[sub]
      if not s then return out, 0 end
      local free = math.min(PER - redis.call('ZCOUNT', s.lease, '(' .. now, '+inf'), limit - #out)
      if free > 0 then
        local expired = redis.call('ZRANGEBYSCORE', s.lease, '-inf', now, 'LIMIT', 0, free)
        local due = {}
        if free > #expired then due = redis.call('ZRANGEBYSCORE', s.due, '-inf', now, 'LIMIT', 0, free - #expired) end
        for _, m in ipairs(expired) do if not D[idOf(m)] then return out, 0 end end
        for _, m in ipairs(due) do if not D[idOf(m)] then return out, 0 end end
        for _, m in ipairs(expired) do take(s, m, 1) end
        for _, m in ipairs(due) do take(s, m, 0) end
      end
      lane(sub)
    end
    if #out == before then break end
  end
  return out, 1
end
`;

/**
 * Lua `finishAll(from)`: records the attempts in ARGV[from..], 7 each: id, claim, status,
 * nextAttemptMs ('' = keep), uncount ('1'), lastError ('' = none), lastStatus ('' = none). Returns
 * per attempt 1 (recorded), 0 (not the current claim) or -1 (its subscription is not declared:
 * nothing done, the caller runs it again with it).
 */
const FINISH_FN = `
local function finishAll(from)
  local out, touched = {}, {}
  for i = from, #ARGV, 7 do
    local id = ARGV[i]
    local key = D[id]
    local state = redis.call('HMGET', key, 'status', 'claim', 'subscriptionId')
    if state[1] ~= 'in-flight' or state[2] ~= ARGV[i + 1] then
      table.insert(out, 0)
    elseif not S[state[3]] then
      table.insert(out, -1)
    else
      local sub, status, m = state[3], ARGV[i + 2], member(id)
      local s = S[sub]
      redis.call('ZREM', s.lease, m)
      redis.call('HINCRBY', counts, 'in-flight', -1)
      redis.call('HDEL', key, 'leaseUntilMs')
      redis.call('HSET', key, 'status', status, 'updatedMs', ARGV[1])
      if ARGV[i + 3] ~= '' then redis.call('HSET', key, 'nextAttemptMs', ARGV[i + 3]) end
      if ARGV[i + 4] == '1' then
        redis.call('HINCRBY', key, 'attempts', -1)
      else
        if ARGV[i + 5] ~= '' then redis.call('HSET', key, 'lastError', ARGV[i + 5]) else redis.call('HDEL', key, 'lastError') end
        if ARGV[i + 6] ~= '' then redis.call('HSET', key, 'lastStatus', ARGV[i + 6]) else redis.call('HDEL', key, 'lastStatus') end
      end
      if status == 'pending' then
        redis.call('ZADD', s.due, redis.call('HGET', key, 'nextAttemptMs'), m)
        redis.call('HINCRBY', counts, 'pending', 1)
      else
        redis.call('ZADD', finished[status], ARGV[1], m)
      end
      touched[sub] = true
      table.insert(out, 1)
    end
  end
  for sub in pairs(touched) do lane(sub) end
  return out
end
`;

/** Arguments: limit, leaseMs; returns { claimed, complete (see `CLAIM_FN`), Redis's TIME seconds, microseconds }. */
export const CLAIM = new RedisScript(`${HELPERS}${CLAIM_FN}
local claimed, complete = claimUpTo(tonumber(ARGV[a]), now + tonumber(ARGV[a + 1]))
local time = redis.call('TIME')
return { claimed, complete, time[1], time[2] }`);

/** Arguments: the attempts (see `FINISH_FN`). */
export const FINISH = new RedisScript(`${HELPERS}${FINISH_FN}
return finishAll(a)`);

/** Arguments: limit, leaseMs, then the attempts (see `FINISH_FN`); returns { recorded, claimed, complete, TIME seconds, microseconds }. */
export const SETTLE = new RedisScript(`${HELPERS}${FINISH_FN}${CLAIM_FN}
local recorded = finishAll(a + 2)
local claimed, complete = claimUpTo(tonumber(ARGV[a]), now + tonumber(ARGV[a + 1]))
local time = redis.call('TIME')
return { recorded, claimed, complete, time[1], time[2] }`);

/** Arguments: subscriptionId, id (both declared); returns the outcome, then the delivery's fields (none when absent). */
export const REDELIVER = new RedisScript(`${HELPERS}
local sub, id = ARGV[a], ARGV[a + 1]
local key, s = D[id], S[sub]
if redis.call('HGET', key, 'subscriptionId') ~= sub then return {'absent'} end
local status = redis.call('HGET', key, 'status')
if status == 'succeeded' or status == 'dead' then
  local m = member(id)
  redis.call('ZREM', finished[status], m)
  redis.call('HSET', key, 'status', 'pending', 'attempts', 0, 'nextAttemptMs', ARGV[1], 'updatedMs', ARGV[1])
  redis.call('ZADD', s.due, ARGV[1], m)
  redis.call('HINCRBY', counts, 'pending', 1)
  lane(sub)
  status = 'redelivered'
else
  status = 'busy'
end
local out = redis.call('HGETALL', key)
table.insert(out, 1, status)
return out`);

/**
 * Arguments: subscriptionId (declared), only pending ('1') or all, then the members (`{seq16}|{id}`)
 * of its due set (pending) or the ids of its id set (all) as read before, each declared. Deletes
 * each one still of the subscription (and still pending when only pending); drops a member whose
 * delivery is gone. Returns { deleted, dropped }.
 */
export const DELETE_OF = new RedisScript(`${HELPERS}
local sub, onlyPending = ARGV[a], ARGV[a + 1] == '1'
local s = S[sub]
local deleted, dropped = 0, 0
for i = a + 2, #ARGV do
  local id = onlyPending and idOf(ARGV[i]) or ARGV[i]
  local state = redis.call('HMGET', D[id], 'subscriptionId', 'status')
  if not state[1] then
    if onlyPending then redis.call('ZREM', s.due, ARGV[i]) else redis.call('ZREM', s.ids, id) end
    dropped = dropped + 1
  elseif state[1] == sub and (state[2] == 'pending' or not onlyPending) then
    deleted = deleted + remove(id)
  end
end
lane(sub)
return { deleted, dropped }`);

/**
 * Arguments: which ('succeeded', 'dead' or 'excess'), the time before which they go (or, for
 * 'excess', the dead deliveries kept at most), then members of that set as read before (each
 * delivery and its subscription declared). Deletes each still due to go: finished before the time,
 * or among the oldest beyond the count. Returns how many it deleted.
 */
export const PURGE = new RedisScript(`${HELPERS}
local which, bound = ARGV[a], tonumber(ARGV[a + 1])
local set = finished[which] or finished.dead
local removed = 0
for i = a + 2, #ARGV do
  local m = ARGV[i]
  local go
  if which == 'excess' then
    local rank = redis.call('ZRANK', set, m)
    go = rank and rank < redis.call('ZCARD', set) - bound
  else
    local score = redis.call('ZSCORE', set, m)
    go = score and tonumber(score) < bound
  end
  if go then removed = removed + (remove(idOf(m)) or 0) end
end
return removed`);

/**
 * Arguments: none; every delivery in the old keys and its subscription declared. Moves a queue
 * written before leased claims (one `P dq:pending` sorted set and a `P dq:inflight` set) into the
 * per-subscription layout: pending ones into their subscription's due set, in-flight ones under an
 * ended lease (claimable at once, as a stop's were). Idempotent: does nothing when neither old key
 * exists. Returns how many deliveries it moved, or -1 (nothing done) when one is not declared.
 */
export const MIGRATE = new RedisScript(`${HELPERS}
local pending = redis.call('ZRANGE', pendingOld, 0, -1, 'WITHSCORES')
local inflight = redis.call('SMEMBERS', inflightOld)
local ids = {}
for i = 1, #pending, 2 do table.insert(ids, idOf(pending[i])) end
for _, id in ipairs(inflight) do table.insert(ids, id) end
for _, id in ipairs(ids) do
  if not D[id] then return -1 end
  local sub = redis.call('HGET', D[id], 'subscriptionId')
  if sub and not S[sub] then return -1 end
end
local moved, touched = 0, {}
local function move(id, zset, score)
  local sub = redis.call('HGET', D[id], 'subscriptionId')
  if not sub then return end
  redis.call('ZADD', S[sub][zset], score, member(id))
  touched[sub] = true
  moved = moved + 1
end
for i = 1, #pending, 2 do move(idOf(pending[i]), 'due', pending[i + 1]) end
for _, id in ipairs(inflight) do
  move(id, 'lease', 0)
  redis.call('HSET', D[id], 'leaseUntilMs', 0)
end
if #pending > 0 or #inflight > 0 then
  redis.call('HINCRBY', counts, 'pending', #pending / 2)
  redis.call('HINCRBY', counts, 'in-flight', #inflight)
end
redis.call('DEL', pendingOld, inflightOld)
for sub in pairs(touched) do lane(sub) end
return moved`);
