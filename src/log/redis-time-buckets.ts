/**
 * The Redis event log's time buckets: the first and last position of each minute and hour of event
 * time (`P log:tb:m`, `P log:tb:h`, `f{bucket}`/`l{bucket}`; the hour hash also holds the `min` and
 * `max` hour), written by the log's append script, read to bound a time window's scan, dropped
 * with the events pruning removes, and built once for a log written before they existed.
 */
import type { Redis } from 'ioredis';
import { RedisScript } from '../storage/redis-script.ts';
import type { EventFilter } from './EventLog.ts';

/** Width of a time bucket, ms (one minute); buckets hold the first and last position of their events. */
export const BUCKET_MS = 60_000;
export const MINUTES_PER_HOUR = 60;
/** Minute buckets read for a window at most before whole hours are read from the hour buckets. */
const MAX_MINUTE_BUCKETS = 2 * MINUTES_PER_HOUR;

/**
 * Folds bucket bounds into the bucket hashes, keeping the least first and greatest last position
 * (the backfill of a log written before buckets existed; appends may run meanwhile). KEYS: minute
 * buckets, hour buckets. ARGV: n minute triples (bucket, first, last), then hour triples.
 */
const FOLD_BUCKETS = new RedisScript(`
local function fold(key, bucket, first, last)
  local f = redis.call('HGET', key, 'f' .. bucket)
  if not f or tonumber(first) < tonumber(f) then redis.call('HSET', key, 'f' .. bucket, first) end
  local l = redis.call('HGET', key, 'l' .. bucket)
  if not l or tonumber(last) > tonumber(l) then redis.call('HSET', key, 'l' .. bucket, last) end
end
local n = tonumber(ARGV[1])
for i = 2, 1 + n * 3, 3 do fold(KEYS[1], ARGV[i], ARGV[i + 1], ARGV[i + 2]) end
for i = 2 + n * 3, #ARGV, 3 do
  fold(KEYS[2], ARGV[i], ARGV[i + 1], ARGV[i + 2])
  local low = redis.call('HGET', KEYS[2], 'min')
  if not low or tonumber(ARGV[i]) < tonumber(low) then redis.call('HSET', KEYS[2], 'min', ARGV[i]) end
  local high = redis.call('HGET', KEYS[2], 'max')
  if not high or tonumber(ARGV[i]) > tonumber(high) then redis.call('HSET', KEYS[2], 'max', ARGV[i]) end
end
`);

/**
 * Drops the time buckets whose last position is gone (pruning deletes a prefix of the log: every
 * position up to ARGV[1]), then sets the hour range (`min`, `max`) to the hours of the earliest and
 * latest event time left (none: removed). Checked and dropped in one script, so an append that
 * adds to a bucket meanwhile keeps it. KEYS: minute buckets, hour buckets, time. ARGV: the last
 * gone position, n, n minute buckets, then hour buckets. Returns how many buckets it dropped.
 */
const DROP_BUCKETS = new RedisScript(`
local gone = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local dropped = 0
local function drop(key, bucket)
  local last = redis.call('HGET', key, 'l' .. bucket)
  if last and tonumber(last) <= gone then
    redis.call('HDEL', key, 'f' .. bucket, 'l' .. bucket)
    dropped = dropped + 1
  end
end
for i = 3, 2 + n do drop(KEYS[1], ARGV[i]) end
for i = 3 + n, #ARGV do drop(KEYS[2], ARGV[i]) end
local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
local last = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')
if #first == 0 then
  redis.call('HDEL', KEYS[2], 'min', 'max')
else
  local hour = ${BUCKET_MS * MINUTES_PER_HOUR}
  redis.call('HSET', KEYS[2], 'min', string.format('%d', math.floor(tonumber(first[2]) / hour)), 'max', string.format('%d', math.floor(tonumber(last[2]) / hour)))
end
return dropped
`);

/** Buckets handed to one `DROP_BUCKETS` call at most. */
const DROP_CHUNK = 1_000;

/** Time entries read per round trip by the bucket backfill. */
const BACKFILL_CHUNK = 5_000;

/** The keys the buckets live under and read (the log's). */
export interface TimeBucketKeys {
  minutes: string;
  hours: string;
  /** The log's event-time index (position by time). */
  time: string;
  /** The log's positions. */
  all: string;
  seq: string;
  /** Marks that the backfill ran. */
  built: string;
  /** Marks that the one sweep of buckets an older pruning left ran. */
  swept: string;
}

/** The time buckets of one Redis event log. */
export class RedisTimeBuckets {
  readonly #keys: TimeBucketKeys;

  constructor(keys: TimeBucketKeys) {
    this.#keys = keys;
  }

  /**
   * Fills the time buckets of a log written before they existed (once per log: marked done with
   * `P log:tb:built`; later appends keep them). Safe to run on two replicas at once.
   */
  async backfill(client: Redis): Promise<void> {
    if ((await client.exists(this.#keys.built)) === 1) return;
    for (let offset = 0; ; offset += BACKFILL_CHUNK) {
      const flat = await client.zrange(this.#keys.time, String(offset), String(offset + BACKFILL_CHUNK - 1), 'WITHSCORES');
      if (flat.length === 0) break;
      const minutes = new Map<number, [number, number]>();
      const hours = new Map<number, [number, number]>();
      for (let i = 0; i < flat.length; i += 2) {
        const [position, timeMs] = [Number(flat[i]), Number(flat[i + 1])];
        for (const [buckets, bucket] of [[minutes, Math.floor(timeMs / BUCKET_MS)], [hours, Math.floor(timeMs / (BUCKET_MS * MINUTES_PER_HOUR))]] as const) {
          const known = buckets.get(bucket);
          buckets.set(bucket, known ? [Math.min(known[0], position), Math.max(known[1], position)] : [position, position]);
        }
      }
      const triples = (buckets: Map<number, [number, number]>) => [...buckets].flatMap(([bucket, [first, last]]) => [bucket, first, last]);
      await FOLD_BUCKETS.run(client, [this.#keys.minutes, this.#keys.hours], [minutes.size, ...triples(minutes), ...triples(hours)]);
    }
    await client.set(this.#keys.built, '1');
  }

  /**
   * Drops the time buckets a log pruned before buckets were pruned with it still has (once per log:
   * marked done with `P log:tb:swept`): every bucket whose last position is before the log's first.
   */
  async sweep(client: Redis): Promise<void> {
    if ((await client.exists(this.#keys.swept)) === 1) return;
    const [first] = await client.zrange(this.#keys.all, '0', '0');
    const gone = first === undefined ? Number(await client.get(this.#keys.seq) ?? 0) : Number(first) - 1;
    const dead = async (key: string): Promise<string[]> => {
      const buckets: string[] = [];
      let cursor = '0';
      do {
        const [next, flat] = await client.hscan(key, cursor, 'MATCH', 'l*', 'COUNT', 1_000);
        for (let i = 0; i < flat.length; i += 2) if (Number(flat[i + 1]) <= gone) buckets.push(flat[i]!.slice(1));
        cursor = next;
      } while (cursor !== '0');
      return buckets;
    };
    if (gone > 0) await this.drop(client, gone, await dead(this.#keys.minutes), await dead(this.#keys.hours));
    await client.set(this.#keys.swept, '1');
  }

  /** Runs `DROP_BUCKETS` over `minutes` and `hours` in bounded calls. */
  async drop(client: Redis, gone: number, minutes: Iterable<number | string>, hours: Iterable<number | string>): Promise<void> {
    const [m, h] = [[...minutes], [...hours]];
    const keys = [this.#keys.minutes, this.#keys.hours, this.#keys.time];
    do {
      const minuteChunk = m.splice(0, DROP_CHUNK);
      const hourChunk = h.splice(0, DROP_CHUNK);
      await DROP_BUCKETS.run(client, keys, [gone, minuteChunk.length, ...minuteChunk, ...hourChunk]);
    } while (m.length > 0 || h.length > 0);
  }

  /**
   * The least first and greatest last position of the minute buckets of the window: whole hours
   * from the hour buckets, the partial hours at both ends by the minute. An open end stops at the
   * earliest or latest hour any event has.
   */
  async windowBounds(client: Redis, filter: EventFilter): Promise<{ start: number; end: number } | undefined> {
    const [low, high] = await client.hmget(this.#keys.hours, 'min', 'max');
    if (low === null || high === null) return undefined;
    const from = filter.fromMs === undefined ? Number(low) * MINUTES_PER_HOUR : Math.floor(filter.fromMs / BUCKET_MS);
    const to = filter.toMs === undefined ? (Number(high) + 1) * MINUTES_PER_HOUR - 1 : Math.floor(filter.toMs / BUCKET_MS);
    if (from > to) return undefined;
    const firstHour = Math.ceil(from / MINUTES_PER_HOUR);
    const lastHour = Math.floor((to + 1) / MINUTES_PER_HOUR) - 1;
    const reads = to - from < MAX_MINUTE_BUCKETS || firstHour > lastHour
      ? [bucketFields(client, this.#keys.minutes, from, to)]
      : [
        bucketFields(client, this.#keys.minutes, from, firstHour * MINUTES_PER_HOUR - 1),
        bucketFields(client, this.#keys.hours, Math.max(firstHour, Number(low)), Math.min(lastHour, Number(high))),
        bucketFields(client, this.#keys.minutes, (lastHour + 1) * MINUTES_PER_HOUR, to),
      ];
    const found = (await Promise.all(reads)).filter((bounds): bounds is { start: number; end: number } => bounds !== undefined);
    if (found.length === 0) return undefined;
    return { start: Math.min(...found.map((b) => b.start)), end: Math.max(...found.map((b) => b.end)) };
  }
}

/** The least first and greatest last position of the buckets `from`..`to` of the hash `key`, or undefined when none holds an event. */
async function bucketFields(client: Redis, key: string, from: number, to: number): Promise<{ start: number; end: number } | undefined> {
  if (from > to) return undefined;
  const fields: string[] = [];
  for (let bucket = from; bucket <= to; bucket++) fields.push(`f${bucket}`, `l${bucket}`);
  const values = await client.hmget(key, ...fields);
  let start = Number.POSITIVE_INFINITY;
  let end = 0;
  for (let i = 0; i < values.length; i += 2) {
    if (values[i] === null) continue;
    start = Math.min(start, Number(values[i]));
    end = Math.max(end, Number(values[i + 1]));
  }
  return end === 0 ? undefined : { start, end };
}
