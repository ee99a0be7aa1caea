/**
 * The `CommandStore` on Redis (`storage.driver: redis`), shared by every gateway replica on one
 * Redis and prefix. Every change that touches more than one key is ONE Lua script, so it is atomic
 * and two replicas never interleave inside it: the accept of a command (idempotency record and
 * outbox entry together, or neither), a claim of an id, a reschedule, a completion, an alias.
 *
 * Keys (`P` = `storage.prefix`):
 * - `P cmd:idem` hash id → record JSON, `P cmd:idem:exp` sorted set id by `expiresMs` (the live
 *   check compares with the caller's `nowMs`, as the other stores do; the sweeper purges);
 * - `P cmd:outbox:seq` the seq counter; `P cmd:outbox` hash member → the entry's fixed fields,
 *   `P cmd:outbox:state` hash member → `{attempts, lastError}`, `P cmd:outbox:backend` hash
 *   member → backend; a member is the seq zero-padded to 16 digits, so a sorted set's ties (same due
 *   time) order by seq;
 * - `P cmd:outbox:due` and `P cmd:outbox:due:{backend}` sorted sets of members by `nextAttemptMs`;
 *   `P cmd:outbox:backends` hash backend → entry count; `P cmd:outbox:claimed` set of the members
 *   whose last claim has not ended (no completion or reschedule since), so a claim knows a reclaim;
 * - `P cmd:alias:{id}` list of a command's aliases (at most `MAX_ALIASES_PER_COMMAND`); each new
 *   one is announced on the channel `P cmd:alias:notices` (`AliasNotices`: open streams of every
 *   replica follow it).
 *
 * Durability: a write is acknowledged once Redis applied it. With `waitReplicas` > 0 an accept is
 * acknowledged only after `WAIT` confirms it on that many replicas (a shortfall throws
 * `STORE_UNAVAILABLE`, so the command is not answered 201); so is a repeat that finds the command
 * already stored (its first accept may have been refused before the write reached a replica). What survives a Redis crash otherwise
 * depends on the server's `appendonly`/`appendfsync` (README, "What a 201 means on Redis").
 * Two scripts still build a key inside (RESCHEDULE and COMPLETE: the due set of the backend they
 * read from the entry); on a Redis Cluster it shares the prefix's hash tag, hence the slot of the
 * declared keys.
 *
 * Leased claims (`claimDue`): claiming moves an entry's due time to the end of its lease, in the
 * script that reads it, so two replicas' dispatchers never deliver one entry at once, and a dead
 * replica's claimed entries are due again when their lease runs out. Due times and lease ends are
 * kept in Redis's clock (`RedisClock`, read with `TIME` in the claim script): a replica whose clock
 * runs ahead never takes another's live claims.
 */
import type { Redis } from 'ioredis';
import { ProtoError } from '../errors.ts';
import { closeRedis, connectStore, type RedisStoreOptions } from '../storage/redis.ts';
import { whileRedisAnswers } from '../storage/redis-errors.ts';
import { RedisClock } from '../storage/redis-clock.ts';
import { publishNotice, RedisNotices } from '../storage/redis-notices.ts';
import { RedisScript } from '../storage/redis-script.ts';
import {
  type AcceptAnswer,
  type AcceptItem,
  type AliasNotices,
  type ClaimedOutboxEntry,
  MAX_ALIASES_PER_COMMAND,
  type CommandStore,
  type IdempotencyRecord,
  type NewOutboxEntry,
  type OutboxEntry,
} from './CommandStore.ts';

/** Where and how the store connects, and how durable an accept must be before it is answered. */
export interface RedisCommandStoreOptions extends RedisStoreOptions {
  /** Replicas that must acknowledge an accept (`WAIT`) before it is answered; 0 = none. */
  waitReplicas?: number;
  /** How long `WAIT`/`WAITAOF` may take, in ms. */
  waitTimeoutMs?: number;
  /** `WAITAOF 1 0` after an accept: fsynced to the primary's AOF first (Redis >= 7.2; checked at open). */
  waitAof?: boolean;
  /** This process's clock, epoch ms, translated into Redis's for due times and leases; default `Date.now` (tests skew it). */
  clock?: () => number;
}

/** The first Redis version with `WAITAOF`. */
const WAITAOF_SINCE: [number, number] = [7, 2];

/** The claim of an id: returns the live holder's JSON, or nil after storing the record. */
const CLAIM = `
local exp = redis.call('ZSCORE', KEYS[2], ARGV[1])
if exp and tonumber(exp) > tonumber(ARGV[2]) then return redis.call('HGET', KEYS[1], ARGV[1]) end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[1])
`;

/**
 * The enqueue of an entry; KEYS[3..10] and ARGV[5..9]; leaves the new seq in `seq`. With ARGV[9]
 * = '1' the entry is claimed as it is enqueued (ARGV[7] is then its lease's end): in the claimed
 * set, as a claim by DUE would leave it.
 */
const ENQUEUE = `
local seq = redis.call('INCR', KEYS[3])
local member = string.format('%016d', seq)
redis.call('HSET', KEYS[4], member, ARGV[5])
redis.call('HSET', KEYS[5], member, ARGV[6])
redis.call('HSET', KEYS[6], member, ARGV[8])
redis.call('ZADD', KEYS[7], ARGV[7], member)
redis.call('ZADD', KEYS[8], ARGV[7], member)
redis.call('HINCRBY', KEYS[9], ARGV[8], 1)
if ARGV[9] == '1' then redis.call('SADD', KEYS[10], member) end
`;

const ACCEPT = new RedisScript(`${CLAIM.replace("return redis.call('HGET', KEYS[1], ARGV[1])", "return {0, redis.call('HGET', KEYS[1], ARGV[1])}")}
${ENQUEUE}
return {1, seq}`);

const CLAIM_ONLY = new RedisScript(CLAIM);

const ENQUEUE_ONLY = new RedisScript(`${ENQUEUE}
return seq`);

/**
 * Due entries of one backend: Redis's TIME (seconds, microseconds), then a flat list of member,
 * score, fixed JSON, state JSON, reclaimed (1 or 0). With a lease end (ARGV[3]), the leased claim: each entry's due time (both sorted sets) moves to
 * the lease's end in the same script, so two replicas never claim one entry and a dead claimer's
 * entries come back when the lease runs out; an entry already in the claimed set is a reclaim.
 * KEYS: due of the backend, fixed, state, overall due, claimed (the last two only used with a lease).
 */
const DUE = new RedisScript(`
local members = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[2]))
local time = redis.call('TIME')
local out = {time[1], time[2]}
for i = 1, #members, 2 do
  local member = members[i]
  local fixed = redis.call('HGET', KEYS[2], member)
  if fixed then
    table.insert(out, member)
    table.insert(out, members[i + 1])
    table.insert(out, fixed)
    table.insert(out, redis.call('HGET', KEYS[3], member))
    if ARGV[3] then
      redis.call('ZADD', KEYS[1], ARGV[3], member)
      redis.call('ZADD', KEYS[4], ARGV[3], member)
      table.insert(out, 1 - redis.call('SADD', KEYS[5], member))
    else
      table.insert(out, 0)
    end
  end
end
return out`);

const RESCHEDULE = new RedisScript(`
local backend = redis.call('HGET', KEYS[1], ARGV[1])
if not backend then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
redis.call('ZADD', KEYS[4] .. backend, ARGV[2], ARGV[1])
redis.call('SREM', KEYS[5], ARGV[1])
return 1`);

const COMPLETE = new RedisScript(`
local backend = redis.call('HGET', KEYS[1], ARGV[1])
if not backend then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5] .. backend, ARGV[1])
if redis.call('HINCRBY', KEYS[6], backend, -1) <= 0 then redis.call('HDEL', KEYS[6], backend) end
redis.call('SREM', KEYS[7], ARGV[1])
return 1`);

/** Removes up to ARGV[2] records expired at ARGV[1]; returns how many. */
const PURGE = new RedisScript(`
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1], 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(ids) do
  redis.call('HDEL', KEYS[1], id)
  redis.call('ZREM', KEYS[2], id)
end
return #ids`);

const ALIAS = new RedisScript(`
if redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
if redis.call('LLEN', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('RPUSH', KEYS[1], ARGV[1])
return 1`);

/** Records purged per script run, so one run never blocks Redis for long. */
const PURGE_BATCH = 500;

const STORE = 'the command store (Redis)';

/** The fields of an entry that never change after the enqueue. */
type FixedFields = Omit<OutboxEntry, 'seq' | 'attempts' | 'nextAttemptMs' | 'lastError'>;
/** The fields a reschedule changes (besides the due time, kept as the sorted sets' score). */
type StateFields = Pick<OutboxEntry, 'attempts' | 'lastError'>;

/** A `CommandStore` on Redis, shared by every replica using the same prefix. */
export class RedisCommandStore implements CommandStore, AliasNotices {
  readonly #options: RedisCommandStoreOptions;
  readonly #keys: ReturnType<typeof keysOf>;
  readonly #clock: RedisClock;
  readonly #notices: RedisNotices;
  #client: Redis | undefined;

  constructor(options: RedisCommandStoreOptions) {
    this.#options = options;
    this.#keys = keysOf(options.prefix);
    this.#clock = new RedisClock(options.clock);
    this.#notices = new RedisNotices(options);
  }

  /** Connects (fails when Redis does not answer). Idempotent. */
  async open(): Promise<void> {
    if (this.#client) return;
    const client = await connectStore(this.#options, 'commands');
    if (this.#options.waitAof) {
      const version = /redis_version:(\d+)\.(\d+)/.exec(await client.info('server'));
      const [major, minor] = [Number(version?.[1] ?? 0), Number(version?.[2] ?? 0)];
      if (major < WAITAOF_SINCE[0] || (major === WAITAOF_SINCE[0] && minor < WAITAOF_SINCE[1])) {
        await closeRedis(client);
        throw new Error(`storage.redis.waitAof needs Redis >= ${WAITAOF_SINCE.join('.')} (WAITAOF); this server is ${major}.${minor}`);
      }
    }
    try {
      await this.#clock.measure(() => client.time(), true);
    } catch (err) {
      await closeRedis(client);
      throw err;
    }
    this.#client = client;
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    await this.#notices.close();
    if (client) await closeRedis(client);
  }

  /** True while the connection to Redis is up (for `/readyz`). */
  ready(): boolean {
    return this.#client?.status === 'ready';
  }

  async accept(record: IdempotencyRecord, entry: NewOutboxEntry, nowMs: number): Promise<IdempotencyRecord | undefined> {
    const k = this.#keys;
    const reply = (await this.#run(ACCEPT, [k.idem, k.idemExp, ...this.#enqueueKeys(entry.backend)], [
      record.id, nowMs, JSON.stringify(record), record.expiresMs, ...this.#enqueueArgs(entry),
    ])) as [number, string];
    // A repeat waits too: the first accept may have been answered 503 before its write reached a
    // replica, and its retry must not be told 201 for a write no replica has.
    await this.#waitForReplicas();
    return reply[0] === 0 ? (JSON.parse(reply[1]) as IdempotencyRecord) : undefined;
  }

  async acceptBatch(items: AcceptItem[], nowMs: number): Promise<AcceptAnswer[]> {
    // The scripts go out together on the one connection (pipelined) and run in order, each atomic,
    // so a later item sees what an earlier one stored; one WAIT covers the batch. A claimed item's
    // entry is enqueued claimed, due at its lease's end, in the same script.
    const k = this.#keys;
    const replies = (await Promise.all(
      items.map(({ record, entry, leaseMs }) =>
        this.#run(ACCEPT, [k.idem, k.idemExp, ...this.#enqueueKeys(entry.backend)], [
          record.id, nowMs, JSON.stringify(record), record.expiresMs, ...this.#enqueueArgs(entry, leaseMs === undefined ? undefined : nowMs + leaseMs),
        ]),
      ),
    )) as Array<[number, string | number]>;
    // Repeats wait too (see `accept`).
    await this.#waitForReplicas();
    return replies.map((reply) => (reply[0] === 0 ? { holder: JSON.parse(reply[1] as string) as IdempotencyRecord } : { seq: Number(reply[1]) }));
  }

  async claim(record: IdempotencyRecord, nowMs: number): Promise<IdempotencyRecord | undefined> {
    const k = this.#keys;
    const holder = (await this.#run(CLAIM_ONLY, [k.idem, k.idemExp], [record.id, nowMs, JSON.stringify(record), record.expiresMs])) as string | null;
    await this.#waitForReplicas();
    return holder === null ? undefined : (JSON.parse(holder) as IdempotencyRecord);
  }

  async find(id: string, nowMs: number): Promise<IdempotencyRecord | undefined> {
    const client = this.#connected();
    const [expires, json] = await whileRedisAnswers(STORE, () => Promise.all([client.zscore(this.#keys.idemExp, id), client.hget(this.#keys.idem, id)]));
    if (expires === null || json === null || Number(expires) <= nowMs) return undefined;
    return JSON.parse(json) as IdempotencyRecord;
  }

  async purgeExpired(nowMs: number): Promise<number> {
    let removed = 0;
    for (;;) {
      const batch = Number(await this.#run(PURGE, [this.#keys.idem, this.#keys.idemExp], [nowMs, PURGE_BATCH]));
      removed += batch;
      if (batch < PURGE_BATCH) return removed;
    }
  }

  async enqueue(entry: NewOutboxEntry): Promise<OutboxEntry> {
    const seq = Number(await this.#run(ENQUEUE_ONLY, [this.#keys.idem, this.#keys.idemExp, ...this.#enqueueKeys(entry.backend)], ['', '', '', '', ...this.#enqueueArgs(entry)]));
    await this.#waitForReplicas();
    return { ...structuredClone(entry), seq };
  }

  async due(backend: string, nowMs: number, limit: number): Promise<OutboxEntry[]> {
    if (limit <= 0) return [];
    return (await this.#due(backend, nowMs, limit)).map(({ reclaimed, ...entry }) => entry);
  }

  async claimDue(backend: string, nowMs: number, limit: number, leaseMs: number): Promise<ClaimedOutboxEntry[]> {
    if (limit <= 0) return [];
    return this.#due(backend, nowMs, limit, leaseMs);
  }

  /** DUE in Redis's clock: due at `nowMs` (this process's clock), claimed for `leaseMs` when given; learns the clock offset from its TIME. */
  async #due(backend: string, nowMs: number, limit: number, leaseMs?: number): Promise<ClaimedOutboxEntry[]> {
    const k = this.#keys;
    const now = this.#clock.toRedis(nowMs);
    const args = leaseMs === undefined ? [now, Math.floor(limit)] : [now, Math.floor(limit), now + leaseMs];
    const before = this.#clock.now();
    const reply = (await this.#run(DUE, [k.dueOf + backend, k.outbox, k.state, k.due, k.claimed], args)) as DueReply;
    this.#clock.observe(Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000), before, this.#clock.now());
    return entriesOf(reply.slice(2)).map((entry) => ({ ...entry, nextAttemptMs: this.#clock.fromRedis(entry.nextAttemptMs) }));
  }

  async reschedule(seq: number, attempts: number, nextAttemptMs: number, lastError: string): Promise<void> {
    const k = this.#keys;
    const state: StateFields = { attempts, lastError };
    await this.#run(RESCHEDULE, [k.backendOf, k.state, k.due, k.dueOf, k.claimed], [member(seq), this.#clock.toRedis(nextAttemptMs), JSON.stringify(state)]);
  }

  async complete(seq: number): Promise<void> {
    const k = this.#keys;
    await this.#run(COMPLETE, [k.backendOf, k.outbox, k.state, k.due, k.dueOf, k.backends, k.claimed], [member(seq)]);
  }

  async nextDueMs(): Promise<number | undefined> {
    const client = this.#connected();
    const first = await whileRedisAnswers(STORE, () => client.zrange(this.#keys.due, '0', '0', 'WITHSCORES'));
    return first.length === 0 ? undefined : this.#clock.fromRedis(Number(first[1]));
  }

  async backends(): Promise<string[]> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => client.hkeys(this.#keys.backends));
  }

  async depth(backend?: string): Promise<number> {
    const client = this.#connected();
    if (backend === undefined) return whileRedisAnswers(STORE, () => client.zcard(this.#keys.due));
    return Number((await whileRedisAnswers(STORE, () => client.hget(this.#keys.backends, backend))) ?? 0);
  }

  async rememberAlias(id: string, alias: string): Promise<void> {
    const added = await this.#run(ALIAS, [this.#keys.aliasOf + id], [alias, MAX_ALIASES_PER_COMMAND]);
    if (added === 1) await publishNotice(this.#connected(), this.#keys.aliasNotices, JSON.stringify([id, alias]));
  }

  /** Opens the notice connection on first use; `listener` hears every alias any replica remembers. */
  async watchAliases(listener: (id: string, alias: string) => void): Promise<() => void> {
    await this.#notices.open();
    return this.#notices.listen(this.#keys.aliasNotices, (message) => {
      const [id, alias] = JSON.parse(message) as [string, string];
      listener(id, alias);
    });
  }

  async aliasesOf(id: string): Promise<string[]> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => client.lrange(this.#keys.aliasOf + id, 0, -1));
  }

  /** ARGV[5..8] of ENQUEUE: fixed JSON, state JSON, due time (in Redis's clock), backend. */
  /** ARGV[5..9] of ENQUEUE: fixed JSON, state JSON, due time (Redis's clock), backend, claimed ('1' with `leaseEndMs`: claimed until then). */
  #enqueueArgs(entry: NewOutboxEntry, leaseEndMs?: number): Array<string | number> {
    const { attempts, nextAttemptMs, lastError, ...fixed } = entry;
    const state: StateFields = { attempts, ...(lastError !== undefined && { lastError }) };
    return [JSON.stringify(fixed), JSON.stringify(state), this.#clock.toRedis(leaseEndMs ?? nextAttemptMs), entry.backend, leaseEndMs === undefined ? '0' : '1'];
  }

  /** KEYS[3..10] of ENQUEUE, `backend`'s due set among them. */
  #enqueueKeys(backend: string): string[] {
    const k = this.#keys;
    return [k.seq, k.outbox, k.state, k.backendOf, k.due, k.dueOf + backend, k.backends, k.claimed];
  }

  async #run(script: RedisScript, keys: string[], args: Array<string | number>): Promise<unknown> {
    const client = this.#connected();
    return whileRedisAnswers(STORE, () => script.run(client, keys, args));
  }

  /** With `waitAof`/`waitReplicas`, waits until the writes so far are fsynced / on that many replicas; a shortfall is a 503. */
  async #waitForReplicas(): Promise<void> {
    const client = this.#connected();
    if (this.#options.waitAof) {
      const [local] = (await whileRedisAnswers(STORE, () => client.call('WAITAOF', 1, 0, this.#options.waitTimeoutMs ?? 1_000))) as [number, number];
      if (local < 1) throw new ProtoError('STORE_UNAVAILABLE', `${STORE}: the write was not fsynced to the AOF in time`, undefined, { 'Retry-After': '1' });
    }
    const wanted = this.#options.waitReplicas ?? 0;
    if (wanted <= 0) return;
    const acked = await whileRedisAnswers(STORE, () => client.wait(wanted, this.#options.waitTimeoutMs ?? 1_000));
    if (acked < wanted) {
      throw new ProtoError('STORE_UNAVAILABLE', `${STORE}: ${acked} of ${wanted} replicas confirmed the write in time`, { acked, wanted }, { 'Retry-After': '1' });
    }
  }

  #connected(): Redis {
    if (!this.#client) throw new Error('RedisCommandStore is not open');
    return this.#client;
  }
}

function keysOf(prefix: string) {
  const p = `${prefix}cmd:`;
  return {
    idem: `${p}idem`,
    idemExp: `${p}idem:exp`,
    seq: `${p}outbox:seq`,
    outbox: `${p}outbox`,
    state: `${p}outbox:state`,
    backendOf: `${p}outbox:backend`,
    due: `${p}outbox:due`,
    dueOf: `${p}outbox:due:`,
    backends: `${p}outbox:backends`,
    claimed: `${p}outbox:claimed`,
    aliasOf: `${p}alias:`,
    aliasNotices: `${p}alias:notices`,
  };
}

function member(seq: number): string {
  return String(seq).padStart(16, '0');
}

/** DUE's flat answer: per entry its member, score (due time), fixed JSON, state JSON and reclaimed (1 or 0). */
type DueReply = Array<string | number | null>;

/** Outbox entries from DUE's flat answer. */
function entriesOf(flat: DueReply): ClaimedOutboxEntry[] {
  const entries: ClaimedOutboxEntry[] = [];
  for (let i = 0; i < flat.length; i += 5) {
    const fixed = JSON.parse(flat[i + 2] as string) as FixedFields;
    const state = JSON.parse((flat[i + 3] as string | null) ?? '{"attempts":0}') as StateFields;
    entries.push({
      seq: Number(flat[i]), ...fixed, attempts: state.attempts, nextAttemptMs: Number(flat[i + 1]),
      ...(state.lastError !== undefined && { lastError: state.lastError }), reclaimed: flat[i + 4] === 1,
    });
  }
  return entries;
}
