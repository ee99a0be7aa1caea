/**
 * The event log on Redis (`storage.driver: redis`), shared by every gateway replica on one Redis
 * and prefix. Layout (`P` = `storage.prefix`):
 *
 * - `P log:seq` the position counter (INCR: positions are dense, never reused);
 * - `P log:ev` hash position → `{"b": backend, "e": event}` JSON; `P log:ids` hash event id →
 *   position (de-duplication and `positionOf`); `P log:cp` hash of checkpoints;
 * - sorted sets of positions scored by position: `P log:all` (the log order) and one per indexed
 *   key, `P log:ix:type:{t}`, `log:ix:source:{s}`, `log:ix:corr:{c}`, `log:ix:backend:{b}`;
 *   `P log:time` positions scored by the event's `time`, `P log:added` by append time (retention);
 * - `P log:tb:m` and `P log:tb:h` time buckets: the first and last position of each minute and hour
 *   of event time (`f{bucket}`, `l{bucket}`; the hour hash also the `min` and `max` hour), dropped
 *   when pruning deletes their last event;
 * - `P log:tail` a Stream with one entry per append of up to 500 events (a larger append writes
 *   several; id `{last position}-0`, fields position → the stored JSON), capped with `MAXLEN ~`:
 *   the live fan-out across replicas reads it.
 *
 * An append is ONE Lua script: positions (INCR), de-duplication by id, every index, the checkpoint
 * and the tail entry, so it is atomic and replicas never interleave inside it. A query walks one
 * index (the smallest of those its filter names, or the union of the correlation ids' indexes) in
 * position order from the cursor, so a filtered page or a deep cursor is never a scan of the whole
 * log; a time-only window reads `log:time` by score (cost: the window, not the log).
 *
 * Live fan-out: `RedisTail` (redis-tail.ts) reads the tail on a connection of its own and hands
 * every append of any replica to local listeners in log order, without gap or repeat.
 *
 * Every script declares every key it touches in `KEYS` (the append: each event's index keys too),
 * and every key shares the prefix's hash tag, so a Redis Cluster runs them on the prefix's slot.
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../storage/redis.ts';
import { whileRedisAnswers } from '../storage/redis-errors.ts';
import { RedisScript } from '../storage/redis-script.ts';
import { BUCKET_MS, MINUTES_PER_HOUR, RedisTimeBuckets } from './redis-time-buckets.ts';
import type {
  AppendResult,
  Checkpoint,
  EventFilter,
  EventLog,
  EventPage,
  LogListener,
  NewEvent,
  RetainingLog,
  StoredEvent,
} from './EventLog.ts';
import { assertPageArgs, eventKeys, matchesFilter, storedEvent, type EventKeys } from './event-query.ts';
import type { ListenerErrorHandler } from './listeners.ts';
import { RedisTail } from './redis-tail.ts';
import { excessEvents, expiryCutoffMs, splitAtFloor, type PruneResult, type RetentionLimits } from './retention.ts';

/** Where and how the log connects. */
export interface RedisEventLogOptions extends RedisStoreOptions {
  /** Approximate number of appends the tail stream keeps (default 10 000); older ones are read from the log. */
  tailMaxLen?: number;
  /** Receives errors thrown by subscribers; default `process.emitWarning`. */
  onListenerError?: ListenerErrorHandler;
}

/** Fields per event in the append script's ARGV. */
const FIELDS = 7;
/** Events per tail stream entry at most (an append of more writes several entries, in order). */
const TAIL_ENTRY_EVENTS = 500;
/** Positions read per round trip when walking an index. */
const MAX_CHUNK = 1_000;
/** Events deleted per transaction by `prune`. */
const PRUNE_CHUNK = 500;

/**
 * KEYS: seq, ids, ev, all, added, time, cp, tail, clock, minute buckets, hour buckets, then per event
 * its index keys: type, source, correlation id (when it has one), backend (when it has one). ARGV:
 * nowMs, hasCheckpoint, cpKey, cpValue, tailMaxLen, '' (unused), n, then per event: id, json, type,
 * source, correlation id, backend, timeMs
 * (an optional value is '' when absent, else ':' followed by the value). Returns each event's position
 * (0 for a duplicate).
 */
const APPEND = new RedisScript(`
local now = tonumber(ARGV[1])
local clock = tonumber(redis.call('GET', KEYS[9]) or '0')
if clock > now then now = clock end
local k = 12
local n = tonumber(ARGV[7])
local positions = {}
local tail = {}
for i = 0, n - 1 do
  local b = 8 + i * ${FIELDS}
  local id = ARGV[b]
  local ixType, ixSource, ixCorr, ixBackend = KEYS[k], KEYS[k + 1], nil, nil
  k = k + 2
  if ARGV[b + 4] ~= '' then ixCorr = KEYS[k]; k = k + 1 end
  if ARGV[b + 5] ~= '' then ixBackend = KEYS[k]; k = k + 1 end
  if redis.call('HEXISTS', KEYS[2], id) == 1 then
    positions[#positions + 1] = 0
  else
    local pos = redis.call('INCR', KEYS[1])
    redis.call('HSET', KEYS[2], id, pos)
    redis.call('HSET', KEYS[3], pos, ARGV[b + 1])
    redis.call('ZADD', KEYS[4], pos, pos)
    redis.call('ZADD', KEYS[5], now, pos)
    redis.call('ZADD', ixType, pos, pos)
    redis.call('ZADD', ixSource, pos, pos)
    if ixCorr then redis.call('ZADD', ixCorr, pos, pos) end
    if ixBackend then redis.call('ZADD', ixBackend, pos, pos) end
    if ARGV[b + 6] ~= '' then
      local t = tonumber(string.sub(ARGV[b + 6], 2))
      redis.call('ZADD', KEYS[6], t, pos)
      local minute = string.format('%d', math.floor(t / ${BUCKET_MS}))
      local hour = string.format('%d', math.floor(t / ${BUCKET_MS * MINUTES_PER_HOUR}))
      -- Positions only grow: the first one of a bucket is set once, the last one always.
      redis.call('HSETNX', KEYS[10], 'f' .. minute, pos)
      redis.call('HSET', KEYS[10], 'l' .. minute, pos)
      redis.call('HSETNX', KEYS[11], 'f' .. hour, pos)
      redis.call('HSET', KEYS[11], 'l' .. hour, pos)
      local low = redis.call('HGET', KEYS[11], 'min')
      if not low or tonumber(hour) < tonumber(low) then redis.call('HSET', KEYS[11], 'min', hour) end
      local high = redis.call('HGET', KEYS[11], 'max')
      if not high or tonumber(hour) > tonumber(high) then redis.call('HSET', KEYS[11], 'max', hour) end
    end
    positions[#positions + 1] = pos
    tail[#tail + 1] = pos
    tail[#tail + 1] = ARGV[b + 1]
  end
end
if #tail > 0 then
  redis.call('SET', KEYS[9], now)
  -- One tail entry per ${TAIL_ENTRY_EVENTS} events: unpack() of a whole large batch would overflow Lua's
  -- stack ("too many results to unpack") after the events were written.
  local step = ${TAIL_ENTRY_EVENTS * 2}
  for first = 1, #tail, step do
    local last = math.min(first + step - 1, #tail)
    redis.call('XADD', KEYS[8], 'MAXLEN', '~', ARGV[5], tail[last - 1] .. '-0', unpack(tail, first, last))
  end
end
if ARGV[2] == '1' then redis.call('HSET', KEYS[7], ARGV[3], ARGV[4]) end
return positions
`);

/** An optional value for the script: '' when absent, else ':' + value. */
function optional(value: string | number | undefined): string {
  return value === undefined ? '' : `:${value}`;
}

/** A stored row as JSON. */
interface Row {
  b?: string;
  e: StoredEvent['event'];
}

/** An `EventLog` on Redis, shared by every replica on the same prefix. */
export class RedisEventLog implements EventLog, RetainingLog {
  readonly #options: RedisEventLogOptions;
  readonly #keys: Record<'seq' | 'ids' | 'ev' | 'all' | 'added' | 'time' | 'cp' | 'tail' | 'clock' | 'ix' | 'minutes' | 'hours' | 'bucketsBuilt' | 'bucketsSwept', string>;
  readonly #tail: RedisTail;
  #buckets: RedisTimeBuckets;
  #client: Redis | undefined;

  /** @param options see `RedisEventLogOptions`. */
  constructor(options: RedisEventLogOptions) {
    this.#options = options;
    const p = `${options.prefix}log:`;
    this.#keys = {
      seq: `${p}seq`, ids: `${p}ids`, ev: `${p}ev`, all: `${p}all`, added: `${p}added`, time: `${p}time`,
      cp: `${p}cp`, tail: `${p}tail`, clock: `${p}clock`, ix: `${p}ix:`, minutes: `${p}tb:m`, hours: `${p}tb:h`, bucketsBuilt: `${p}tb:built`, bucketsSwept: `${p}tb:swept`,
    };
    this.#buckets = new RedisTimeBuckets({ ...this.#keys, built: this.#keys.bucketsBuilt, swept: this.#keys.bucketsSwept });
    this.#tail = new RedisTail({
      key: this.#keys.tail,
      query: (after, limit) => this.query({}, after, limit),
      parse: parseRow,
      onListenerError: options.onListenerError,
    });
  }

  /** Connects (a command connection and a blocking one for the tail) and starts the tail reader. Idempotent. */
  async open(): Promise<void> {
    if (this.#client) return;
    const client = await connectStore(this.#options, 'commands');
    let blocking: Redis | undefined;
    try {
      blocking = await connectStore(this.#options, 'blocking');
      await this.#buckets.backfill(client);
      await this.#buckets.sweep(client);
      this.#client = client;
      await this.#tail.start(client, blocking);
    } catch (err) {
      this.#client = undefined;
      blocking?.disconnect();
      await closeRedis(client);
      throw err;
    }
  }

  async append(batch: NewEvent[], checkpoint?: Checkpoint): Promise<AppendResult> {
    const client = this.#ready();
    // Serialise the whole batch before anything is sent, so a failing event leaves no trace.
    const rows = batch.map((item) => ({ item, keys: eventKeys(item), json: JSON.stringify(rowOf(item)) }));
    if (rows.length === 0 && !checkpoint) return { appended: [], duplicates: 0 };
    const args: Array<string | number> = [
      Date.now(), checkpoint ? '1' : '0', checkpoint?.key ?? '', checkpoint?.value ?? '',
      this.#options.tailMaxLen ?? 10_000, '', rows.length,
    ];
    for (const { item, keys, json } of rows) {
      args.push(item.event.id, json, keys.type, keys.source, optional(keys.correlationId), optional(keys.backend), optional(keys.timeMs));
    }
    const k = this.#keys;
    const positions = (await whileRedisAnswers('event log', () =>
      APPEND.run(client, [k.seq, k.ids, k.ev, k.all, k.added, k.time, k.cp, k.tail, k.clock, k.minutes, k.hours, ...rows.flatMap(({ keys }) => this.#indexKeys(keys))], args),
    )) as number[];
    const appended: StoredEvent[] = [];
    positions.forEach((position, i) => {
      if (position > 0) appended.push(storedEvent(position, batch[i].backend, batch[i].event));
    });
    if (appended.length > 0) await this.#tail.deliver(appended);
    return { appended, duplicates: batch.length - appended.length };
  }

  async query(filter: EventFilter, after: number, limit: number): Promise<EventPage> {
    const client = this.#ready();
    assertPageArgs(after, limit, filter);
    if (filter.correlationIds?.length === 0) return { events: [] };
    return whileRedisAnswers('event log', async () => {
      const found: StoredEvent[] = [];
      const chunk = Math.min(Math.max(limit + 1, 64), MAX_CHUNK);
      for await (const positions of this.#candidates(client, filter, after, chunk)) {
        const rows = await client.hmget(this.#keys.ev, ...positions.map(String));
        for (let i = 0; i < rows.length && found.length <= limit; i++) {
          const text = rows[i];
          if (text === null) continue; // pruned meanwhile
          const stored = parseRow(positions[i], text);
          if (matchesFilter(eventKeys(stored), filter)) found.push(stored);
        }
        if (found.length > limit) break;
      }
      const events = found.slice(0, limit);
      return found.length > limit ? { events, next: events[events.length - 1].position } : { events };
    });
  }

  async positionOf(id: string): Promise<number | undefined> {
    const client = this.#ready();
    const position = await whileRedisAnswers('event log', () => client.hget(this.#keys.ids, id));
    return position === null ? undefined : Number(position);
  }

  async checkpoint(key: string): Promise<string | undefined> {
    const client = this.#ready();
    return (await whileRedisAnswers('event log', () => client.hget(this.#keys.cp, key))) ?? undefined;
  }

  async saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
    const client = this.#ready();
    await whileRedisAnswers('event log', () => client.hset(this.#keys.cp, checkpoint.key, checkpoint.value));
  }

  /** The highest position in the log (0 when empty); positions are never reused, even after pruning. */
  async head(): Promise<number> {
    const client = this.#ready();
    const last = await whileRedisAnswers('event log', () => client.zrange(this.#keys.all, '-1', '-1'));
    return last.length > 0 ? Number(last[0]) : 0;
  }

  async count(): Promise<number> {
    const client = this.#ready();
    return whileRedisAnswers('event log', () => client.zcard(this.#keys.all));
  }

  /** `listener` sees every later append of any replica on this prefix, in log order. */
  subscribe(listener: LogListener): () => void {
    return this.#tail.subscribe(listener);
  }

  /**
   * Deletes the events appended before `nowMs - maxAgeMs` and the oldest beyond `maxEvents`, never
   * one after `keepAfter`. Append times never decrease along the log (the script keeps a clock), so
   * the expired events are a prefix. Two replicas pruning at once may both count an event.
   */
  async prune(limits: RetentionLimits, nowMs: number = Date.now()): Promise<PruneResult> {
    const client = this.#ready();
    return whileRedisAnswers('event log', async () => {
      const cutoff = expiryCutoffMs(limits, nowMs);
      const [count, expired, deletable] = await Promise.all([
        client.zcard(this.#keys.all),
        cutoff === undefined ? 0 : client.zcount(this.#keys.added, '-inf', `(${cutoff}`),
        limits.keepAfter === undefined ? Number.POSITIVE_INFINITY : client.zcount(this.#keys.all, '-inf', limits.keepAfter),
      ]);
      const wanted = Math.max(excessEvents(limits, count), expired);
      const result = splitAtFloor(wanted, Math.min(deletable, count));
      for (let left = result.removed; left > 0; ) {
        const positions = await client.zrange(this.#keys.all, '0', String(Math.min(left, PRUNE_CHUNK) - 1));
        if (positions.length === 0) break;
        await this.#remove(client, positions);
        left -= positions.length;
      }
      return result;
    });
  }

  /** Stops the tail reader and closes both connections; drops the listeners. Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    await this.#tail.stop();
    if (client) await closeRedis(client);
  }

  /** Deletes the events at `positions` (the log's first ones) with every index entry and the time buckets they leave empty. */
  async #remove(client: Redis, positions: string[]): Promise<void> {
    const texts = await client.hmget(this.#keys.ev, ...positions);
    const tx = client.multi();
    tx.zrem(this.#keys.all, ...positions).zrem(this.#keys.added, ...positions).zrem(this.#keys.time, ...positions);
    tx.hdel(this.#keys.ev, ...positions);
    const minutes = new Set<number>();
    const hours = new Set<number>();
    texts.forEach((text, i) => {
      if (text === null) return;
      const stored = parseRow(Number(positions[i]), text);
      const keys = eventKeys(stored);
      tx.hdel(this.#keys.ids, stored.event.id);
      for (const key of this.#indexKeys(keys)) tx.zrem(key, positions[i]);
      if (keys.timeMs !== undefined) {
        minutes.add(Math.floor(keys.timeMs / BUCKET_MS));
        hours.add(Math.floor(keys.timeMs / (BUCKET_MS * MINUTES_PER_HOUR)));
      }
    });
    await tx.exec();
    // Every position up to the last of these is gone now: a bucket that ends there has no event left.
    await this.#buckets.drop(client, Math.max(...positions.map(Number)), minutes, hours);
  }

  /** The index sorted sets an event is in. */
  #indexKeys(keys: EventKeys): string[] {
    const ix = this.#keys.ix;
    return [
      `${ix}type:${keys.type}`, `${ix}source:${keys.source}`,
      ...(keys.correlationId !== undefined ? [`${ix}corr:${keys.correlationId}`] : []),
      ...(keys.backend !== undefined ? [`${ix}backend:${keys.backend}`] : []),
    ];
  }

  /**
   * Positions after `after` that may match `filter`, ascending, in chunks: read from the smallest
   * index the filter names (the union of the correlation ids' indexes counts as one), from the time
   * index for a time-only window, else from the whole log's order.
   */
  async *#candidates(client: Redis, filter: EventFilter, after: number, chunk: number): AsyncGenerator<number[]> {
    const ix = this.#keys.ix;
    const choices: string[][] = [];
    if (filter.type !== undefined) choices.push([`${ix}type:${filter.type}`]);
    if (filter.source !== undefined) choices.push([`${ix}source:${filter.source}`]);
    if (filter.correlationId !== undefined) choices.push([`${ix}corr:${filter.correlationId}`]);
    if (filter.correlationIds !== undefined) choices.push([...new Set(filter.correlationIds)].map((id) => `${ix}corr:${id}`));
    if (filter.backend !== undefined) choices.push([`${ix}backend:${filter.backend}`]);
    if (choices.length === 0 && (filter.fromMs !== undefined || filter.toMs !== undefined)) {
      yield* this.#timeWindow(client, filter, after, chunk);
      return;
    }
    if (choices.length === 0) choices.push([this.#keys.all]);
    let keys = choices[0];
    if (choices.length > 1) {
      const sizes = await Promise.all(choices.map(async (set) => (await Promise.all(set.map((key) => client.zcard(key)))).reduce((a, b) => a + b, 0)));
      keys = choices[sizes.indexOf(Math.min(...sizes))];
    }
    yield* mergeIndexes(client, keys, after, chunk);
  }

  /**
   * Candidate positions of a time-only window after `after`, ascending: the log's positions between
   * the least first and the greatest last position of the window's time buckets, a chunk at a time
   * (`ZRANGEBYSCORE … LIMIT`); the caller keeps those whose time is inside the window. What a page
   * reads follows the page size (and how interleaved event times are), not the window's size.
   */
  async *#timeWindow(client: Redis, filter: EventFilter, after: number, chunk: number): AsyncGenerator<number[]> {
    const bounds = await this.#buckets.windowBounds(client, filter);
    if (!bounds) return;
    let cursor = Math.max(after, bounds.start - 1);
    for (;;) {
      const positions = (await client.zrangebyscore(this.#keys.all, `(${cursor}`, bounds.end, 'LIMIT', 0, chunk)).map(Number);
      if (positions.length > 0) yield positions;
      if (positions.length < chunk) return;
      cursor = positions[positions.length - 1];
    }
  }

  #ready(): Redis {
    if (!this.#client) throw new Error('RedisEventLog is not open');
    return this.#client;
  }
}

/**
 * The positions after `after` in the union of the sorted sets `keys`, ascending, in chunks: each
 * set is read a chunk at a time and merged up to the lowest last position of a set that may hold
 * more, so nothing is skipped or repeated.
 */
async function* mergeIndexes(client: Redis, keys: string[], after: number, chunk: number): AsyncGenerator<number[]> {
  let cursor = after;
  for (;;) {
    const reads = await Promise.all(keys.map((key) => client.zrangebyscore(key, `(${cursor}`, '+inf', 'LIMIT', 0, chunk)));
    let bound = Number.POSITIVE_INFINITY;
    for (const read of reads) if (read.length === chunk) bound = Math.min(bound, Number(read[read.length - 1]));
    const merged = [...new Set(reads.flat().map(Number))].filter((p) => p <= bound).sort((a, b) => a - b);
    if (merged.length > 0) yield merged;
    if (bound === Number.POSITIVE_INFINITY) return;
    cursor = bound;
  }
}

function rowOf(item: NewEvent): Row {
  return item.backend === undefined ? { e: item.event } : { b: item.backend, e: item.event };
}

function parseRow(position: number, text: string): StoredEvent {
  const row = JSON.parse(text) as Row;
  return storedEvent(position, row.b, row.e);
}
