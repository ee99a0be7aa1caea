/**
 * The SQLite event log (`storage.driver: sqlite`, the default): one file, `node:sqlite`, WAL mode.
 *
 * Durability: `journal_mode=WAL` with `synchronous=NORMAL` (the default here) writes every commit to
 * the WAL file before `append` resolves, so a committed batch survives the process being killed
 * (`kill -9`, a crash); only an OS crash or power loss may lose the last commits. `synchronous: 'FULL'`
 * also fsyncs each commit, which survives those too at a cost in append throughput.
 *
 * Positions come from AUTOINCREMENT: never reused after pruning, and an ignored duplicate may leave
 * a gap (strictly increasing is all the port promises).
 *
 * Reads are keyset pages (`position > ? … ORDER BY position LIMIT n+1`), never OFFSET, and every
 * filter has an index ending in the position, so a page costs the same at any depth.
 *
 * The store assumes it is the only writer of its file (one gateway process): `count()` is kept in
 * memory after the first call.
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
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
import { assertPageArgs, eventKeys, storedEvent } from './event-query.ts';
import { ListenerSet, type ListenerErrorHandler } from './listeners.ts';
import { excessEvents, expiryCutoffMs, type PruneResult, type RetentionLimits } from './retention.ts';
import { SqliteHandle } from '../storage/sqlite.ts';

/** Options of the SQLite store. */
export interface SqliteEventLogOptions {
  /** `PRAGMA synchronous`: NORMAL (default) survives a process crash, FULL also an OS crash or power loss. */
  synchronous?: 'NORMAL' | 'FULL';
  /** How long a statement waits for another connection's lock, in ms; default 5000. */
  busyTimeoutMs?: number;
  /** Receives errors thrown by subscribers; default `process.emitWarning`. */
  onListenerError?: ListenerErrorHandler;
}

/** Events deleted per transaction by `prune`; the event loop runs between batches. */
export const PRUNE_BATCH = 5000;

// user_version 1: the first layout. A later layout bumps it and migrates in open().
const SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  position      INTEGER PRIMARY KEY AUTOINCREMENT,
  id            TEXT NOT NULL UNIQUE,
  type          TEXT NOT NULL,
  source        TEXT NOT NULL,
  correlationid TEXT,
  time_ms       INTEGER,
  backend       TEXT,
  appended_ms   INTEGER NOT NULL,
  envelope      TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_type ON events (type, position);
CREATE INDEX IF NOT EXISTS events_source ON events (source, position);
CREATE INDEX IF NOT EXISTS events_correlationid ON events (correlationid, position);
CREATE INDEX IF NOT EXISTS events_backend ON events (backend, position);
CREATE INDEX IF NOT EXISTS events_time ON events (time_ms);
CREATE TABLE IF NOT EXISTS checkpoints (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
-- The first and last positions of each minute of event time: every event of a time window lies
-- between the least first_position and the greatest last_position of the minutes it covers.
CREATE TABLE IF NOT EXISTS event_time_buckets (bucket INTEGER PRIMARY KEY, first_position INTEGER NOT NULL, last_position INTEGER NOT NULL) WITHOUT ROWID;
-- The same per hour, so a long window reads its whole hours here and only its edges by the minute.
CREATE TABLE IF NOT EXISTS event_time_hours (bucket INTEGER PRIMARY KEY, first_position INTEGER NOT NULL, last_position INTEGER NOT NULL) WITHOUT ROWID;
PRAGMA user_version = 1;
`;

/** Each filter field with its SQL condition, in the order its value is bound (a list binds one value per item). */
const FILTER_CONDITIONS: ReadonlyArray<readonly [keyof EventFilter, (filter: EventFilter) => string]> = [
  ['type', () => 'type = ?'],
  ['source', () => 'source = ?'],
  ['correlationId', () => 'correlationid = ?'],
  ['correlationIds', (filter) => `correlationid IN (${filter.correlationIds!.map(() => '?').join(', ')})`],
  ['backend', () => 'backend = ?'],
  ['fromMs', () => 'time_ms >= ?'],
  ['toMs', () => 'time_ms <= ?'],
];

/**
 * The SQL of one page of `query` for the fields present in `filter`. Parameters, in order: `after`,
 * the value of each present field in `FILTER_CONDITIONS` order, then the row limit (page size + 1).
 * Exported for query-plan tests and benchmarks.
 */
export function selectPageSql(filter: EventFilter): string {
  const conditions = FILTER_CONDITIONS.filter(([field]) => filter[field] !== undefined).map(([, sql]) => sql(filter));
  const where = ['position > ?', ...conditions].join(' AND ');
  return `SELECT position, backend, envelope FROM events WHERE ${where} ORDER BY position LIMIT ?`;
}

/**
 * One page of a time-window-only query from a start position: `+time_ms` keeps the time index out
 * (it would sort the window), so the rowid seek reads in log order. Parameters: after, from, to,
 * limit. Exported for query-plan tests.
 */
export const TIME_WINDOW_PAGE_SQL =
  'SELECT position, backend, envelope FROM events WHERE position > ? AND position <= ? AND +time_ms >= ? AND +time_ms <= ? ORDER BY position LIMIT ?';

/** Width of a time bucket, ms (one minute). */
const BUCKET_MS = 60_000;

/** Minute buckets per hour bucket. */
const MINUTES_PER_HOUR = 60;

/** The bucket of width `ms` of an epoch-ms time in SQL (floor division, also below 0), as `bucketOf` computes it. */
const bucketSql = (ms: number): string => `(time_ms - ((time_ms % ${ms}) + ${ms}) % ${ms}) / ${ms}`;

/** A bucket number beyond any real time (an open end of a window). */
const MAX_BUCKET = Math.floor(Number.MAX_SAFE_INTEGER / BUCKET_MS);

/** The minute bucket of an epoch-ms time. */
function bucketOf(timeMs: number): number {
  return Math.floor(timeMs / BUCKET_MS);
}

/** True when `filter` bounds only the time (`from`, `to`): served by `#timeWindowPage`. */
function isTimeWindowOnly(filter: EventFilter): boolean {
  return (filter.fromMs !== undefined || filter.toMs !== undefined) &&
    FILTER_CONDITIONS.every(([field]) => field === 'fromMs' || field === 'toMs' || filter[field] === undefined);
}

/** The statements prepared once in open(). */
interface Statements {
  insert: StatementSync;
  saveCheckpoint: StatementSync;
  checkpoint: StatementSync;
  positionOf: StatementSync;
  head: StatementSync;
  count: StatementSync;
  lastAppendedMs: StatementSync;
  deleteOldest: StatementSync;
  deleteExpired: StatementSync;
  noteTimeBucket: StatementSync;
  timeWindowBounds: StatementSync;
  noteTimeHour: StatementSync;
  timeWindowHours: StatementSync;
  timeWindowPage: StatementSync;
  firstUnexpired: StatementSync;
  countBetween: StatementSync;
}

interface PageRow {
  position: number;
  backend: string | null;
  envelope: string;
}

/** An `EventLog` in one SQLite file (or `:memory:`); positions start at 1 and are never reused. */
export class SqliteEventLog implements EventLog, RetainingLog {
  readonly #sqlite: SqliteHandle<Statements>;
  readonly #listeners: ListenerSet;
  /** Page statements by a bit mask of the filter fields present and the number of correlation ids (bounded). */
  readonly #pages = new Map<string, StatementSync>();
  #count: number | undefined;
  #lastAppendedMs = 0;

  /**
   * @param path the database file (its directory is created), or `:memory:` for tests.
   * @param options see `SqliteEventLogOptions`.
   */
  constructor(path: string, options: SqliteEventLogOptions = {}) {
    this.#sqlite = new SqliteHandle('SqliteEventLog', path, {
      schema: SCHEMA,
      prepare: prepareStatements,
      synchronous: options.synchronous ?? 'NORMAL',
      busyTimeoutMs: options.busyTimeoutMs,
      optimizeOnClose: true,
    });
    this.#listeners = new ListenerSet(options.onListenerError);
  }

  async open(): Promise<void> {
    if (this.#sqlite.isOpen) return;
    this.#sqlite.open();
    this.#lastAppendedMs = (this.#sqlite.statements.lastAppendedMs.get()?.appended_ms as number | undefined) ?? 0;
    this.#backfillTimeBuckets();
  }

  async append(batch: NewEvent[], checkpoint?: Checkpoint): Promise<AppendResult> {
    const sql = this.#sqlite.statements;
    const appendedMs = this.#nextAppendedMs();
    const appended = this.#sqlite.transaction(() => {
      const added = batch.flatMap((item) => this.#insert(item, appendedMs));
      this.#noteTimeBuckets(added);
      if (checkpoint) sql.saveCheckpoint.run(checkpoint.key, checkpoint.value);
      return added;
    });
    if (this.#count !== undefined) this.#count += appended.length;
    this.#listeners.notify(appended);
    return { appended, duplicates: batch.length - appended.length };
  }

  async query(filter: EventFilter, after: number, limit: number): Promise<EventPage> {
    assertPageArgs(after, limit, filter);
    const rows = isTimeWindowOnly(filter)
      ? this.#timeWindowPage(filter, after, limit + 1)
      : (this.#pageStatement(filter).all(after, ...filterValues(filter), limit + 1) as unknown as PageRow[]);
    const more = rows.length > limit;
    const events = rows.slice(0, limit).map(parseRow);
    return more ? { events, next: events[events.length - 1].position } : { events };
  }

  async positionOf(id: string): Promise<number | undefined> {
    return this.#sqlite.statements.positionOf.get(id)?.position as number | undefined;
  }

  async checkpoint(key: string): Promise<string | undefined> {
    return this.#sqlite.statements.checkpoint.get(key)?.value as string | undefined;
  }

  async saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
    this.#sqlite.statements.saveCheckpoint.run(checkpoint.key, checkpoint.value);
  }

  /**
   * A time-window-only page (`from`/`to`, no other filter), in log order without sorting the window:
   * the minute buckets of the window bound the positions its events can have, then a rowid scan
   * between those bounds reads events in log order and keeps those inside the window, so the cost
   * follows the page size (and how interleaved event times are), not the window's size.
   */
  #timeWindowPage(filter: EventFilter, after: number, limit: number): PageRow[] {
    const sql = this.#sqlite.statements;
    const from = filter.fromMs === undefined ? -MAX_BUCKET : bucketOf(filter.fromMs);
    const to = filter.toMs === undefined ? MAX_BUCKET : bucketOf(filter.toMs);
    const bounds = this.#windowBounds(from, to);
    if (!bounds) return [];
    const fromMs = filter.fromMs ?? Number.MIN_SAFE_INTEGER;
    const toMs = filter.toMs ?? Number.MAX_SAFE_INTEGER;
    return sql.timeWindowPage.all(Math.max(after, bounds.start - 1), bounds.end, fromMs, toMs, limit) as unknown as PageRow[];
  }

  /**
   * The least first and greatest last position of the minute buckets `from`..`to`: whole hours read
   * from the hour table, the partial hours at both ends by the minute (at most ~120 + hours rows).
   */
  #windowBounds(from: number, to: number): { start: number; end: number } | undefined {
    const { timeWindowBounds: minutes, timeWindowHours: hours } = this.#sqlite.statements;
    const firstHour = Math.ceil(from / MINUTES_PER_HOUR);
    const lastHour = Math.floor((to + 1) / MINUTES_PER_HOUR) - 1;
    const parts = firstHour > lastHour
      ? [minutes.get(from, to)]
      : [minutes.get(from, firstHour * MINUTES_PER_HOUR - 1), hours.get(firstHour, lastHour), minutes.get((lastHour + 1) * MINUTES_PER_HOUR, to)];
    const found = (parts as Array<{ start: number | null; end: number | null } | undefined>).filter((b) => b && b.start !== null && b.end !== null) as Array<{ start: number; end: number }>;
    if (found.length === 0) return undefined;
    return { start: Math.min(...found.map((b) => b.start)), end: Math.max(...found.map((b) => b.end)) };
  }

  /** Fills the minute buckets of a log written before they existed (once; later appends keep them). */
  #backfillTimeBuckets(): void {
    const { db } = this.#sqlite;
    if (db.prepare('SELECT 1 FROM event_time_buckets LIMIT 1').get() || !db.prepare('SELECT 1 FROM events LIMIT 1').get()) return;
    this.#sqlite.transaction(() =>
      db.exec(`INSERT OR IGNORE INTO event_time_buckets (bucket, first_position, last_position)
          SELECT ${bucketSql(BUCKET_MS)}, MIN(position), MAX(position) FROM events WHERE time_ms IS NOT NULL GROUP BY 1;
        INSERT OR IGNORE INTO event_time_hours (bucket, first_position, last_position)
          SELECT ${bucketSql(BUCKET_MS * MINUTES_PER_HOUR)}, MIN(position), MAX(position) FROM events WHERE time_ms IS NOT NULL GROUP BY 1`),
    );
  }

  /** The highest position in the log (0 when empty); positions are never reused, even after pruning. */
  async head(): Promise<number> {
    return (this.#sqlite.statements.head.get()?.position as number | null | undefined) ?? 0;
  }

  /** Number of events: one COUNT(*) on the first call, then kept up to date by append and prune. */
  async count(): Promise<number> {
    this.#count ??= this.#sqlite.statements.count.get()!.n as number;
    return this.#count;
  }

  subscribe(listener: LogListener): () => void {
    return this.#listeners.subscribe(listener);
  }

  /**
   * Deletes the events appended before `nowMs - maxAgeMs`, then the oldest beyond `maxEvents`; a
   * limit of 0 disables its rule. Works in transactions of `PRUNE_BATCH` events and yields to the
   * event loop between them. Survivors keep their positions. Returns how many were deleted.
   */
  async prune(limits: RetentionLimits, nowMs: number = Date.now()): Promise<PruneResult> {
    void this.#sqlite.statements; // throws when not open, before any work
    const cutoff = expiryCutoffMs(limits, nowMs);
    const floor = limits.keepAfter ?? Number.MAX_SAFE_INTEGER;
    const expired = cutoff === undefined ? 0 : await this.#pruneExpired(cutoff, floor);
    const removed = expired + (await this.#pruneExcess(limits, floor));
    if (limits.keepAfter === undefined || !this.#sqlite.isOpen) return { removed, heldBack: 0 };
    // What the rules still want gone lies right after the floor (both rules delete a prefix).
    const excess = excessEvents(limits, await this.count());
    const expiredHeld = cutoff === undefined ? 0 : this.#expiredAfter(limits.keepAfter, cutoff);
    return { removed, heldBack: Math.max(excess, expiredHeld) };
  }

  /** Closes the database (after `PRAGMA optimize`) and drops the listeners. Safe to call twice. */
  async close(): Promise<void> {
    this.#pages.clear();
    this.#count = undefined;
    this.#listeners.clear();
    this.#sqlite.close();
  }

  /** Inserts one event unless its id is known; returns it as stored, or nothing for a duplicate. */
  #insert(item: NewEvent, appendedMs: number): StoredEvent[] {
    const k = eventKeys(item);
    const envelope = JSON.stringify(item.event);
    const result = this.#sqlite.statements.insert.run(
      item.event.id, k.type, k.source, k.correlationId ?? null, k.timeMs ?? null, k.backend ?? null, appendedMs, envelope,
    );
    return result.changes === 0 ? [] : [storedEvent(Number(result.lastInsertRowid), item.backend, item.event)];
  }

  /** Widens the position range of each minute bucket the appended events fall in (one upsert per bucket per batch). */
  #noteTimeBuckets(added: StoredEvent[]): void {
    const ranges = new Map<number, [number, number]>();
    for (const stored of added) {
      const timeMs = typeof stored.event.time === 'string' ? Date.parse(stored.event.time) : Number.NaN;
      if (Number.isNaN(timeMs)) continue;
      const bucket = bucketOf(timeMs);
      const range = ranges.get(bucket);
      if (range) range[1] = stored.position;
      else ranges.set(bucket, [stored.position, stored.position]);
    }
    const hours = new Map<number, [number, number]>();
    for (const [bucket, [first, last]] of ranges) {
      this.#sqlite.statements.noteTimeBucket.run(bucket, first, last);
      const hour = Math.floor(bucket / MINUTES_PER_HOUR);
      const range = hours.get(hour);
      hours.set(hour, range ? [Math.min(range[0], first), Math.max(range[1], last)] : [first, last]);
    }
    for (const [hour, [first, last]] of hours) this.#sqlite.statements.noteTimeHour.run(hour, first, last);
  }

  /** Deletes the events appended before `cutoffMs`, batch by batch; returns how many. */
  async #pruneExpired(cutoffMs: number, floor: number): Promise<number> {
    // appended_ms never decreases along positions, so expired events are a prefix: each batch looks
    // at the oldest PRUNE_BATCH events only, and a short batch means the prefix is gone.
    let removed = 0;
    let n = PRUNE_BATCH;
    while (n === PRUNE_BATCH && this.#sqlite.isOpen) {
      n = await this.#deleteBatch((sql) => sql.deleteExpired.run(floor, PRUNE_BATCH, cutoffMs).changes);
      removed += n;
    }
    return removed;
  }

  /** Deletes the oldest events beyond `maxEvents`, batch by batch; returns how many. */
  async #pruneExcess(limits: RetentionLimits, floor: number): Promise<number> {
    let removed = 0;
    let excess = excessEvents(limits, await this.count());
    while (excess > 0 && this.#sqlite.isOpen) {
      const batch = Math.min(excess, PRUNE_BATCH);
      const n = await this.#deleteBatch((sql) => sql.deleteOldest.run(floor, batch).changes);
      removed += n;
      // n = 0 only if another writer emptied the table: stop rather than spin on a stale count.
      excess = n > 0 && this.#sqlite.isOpen ? excessEvents(limits, await this.count()) : 0;
    }
    return removed;
  }

  /** How many events after `floor` were appended before `cutoffMs` (they form a prefix of what follows the floor). */
  #expiredAfter(floor: number, cutoffMs: number): number {
    const { firstUnexpired, countBetween } = this.#sqlite.statements;
    const end = firstUnexpired.get(floor, cutoffMs)?.position as number | undefined;
    return countBetween.get(floor, end ?? Number.MAX_SAFE_INTEGER)!.n as number;
  }

  /** Runs one delete of a prune in its own transaction, then lets the event loop run (appends, reads, close). */
  async #deleteBatch(run: (sql: Statements) => number | bigint): Promise<number> {
    const n = Number(this.#sqlite.transaction(run));
    if (this.#count !== undefined) this.#count -= n;
    await new Promise<void>((resolve) => setImmediate(resolve));
    return n;
  }

  #pageStatement(filter: EventFilter): StatementSync {
    const mask = FILTER_CONDITIONS.reduce((bits, [field], i) => (filter[field] === undefined ? bits : bits | (1 << i)), 0);
    const key = `${mask}:${filter.correlationIds?.length ?? 0}`;
    let statement = this.#pages.get(key);
    if (!statement) {
      statement = this.#sqlite.db.prepare(selectPageSql(filter));
      this.#pages.set(key, statement);
    }
    return statement;
  }

  #nextAppendedMs(): number {
    // A clock that steps back must not make a later event look older than an earlier one (see prune).
    this.#lastAppendedMs = Math.max(this.#lastAppendedMs, Date.now());
    return this.#lastAppendedMs;
  }
}

function prepareStatements(db: DatabaseSync): Statements {
  const oldest = 'SELECT position FROM events WHERE position <= ? ORDER BY position LIMIT ?';
  return {
    insert: db.prepare(
      `INSERT OR IGNORE INTO events (id, type, source, correlationid, time_ms, backend, appended_ms, envelope)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    saveCheckpoint: db.prepare(
      'INSERT INTO checkpoints (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value',
    ),
    checkpoint: db.prepare('SELECT value FROM checkpoints WHERE key = ?'),
    positionOf: db.prepare('SELECT position FROM events WHERE id = ?'),
    head: db.prepare('SELECT MAX(position) AS position FROM events'),
    count: db.prepare('SELECT COUNT(*) AS n FROM events'),
    lastAppendedMs: db.prepare('SELECT appended_ms FROM events ORDER BY position DESC LIMIT 1'),
    deleteOldest: db.prepare(`DELETE FROM events WHERE position IN (${oldest})`),
    deleteExpired: db.prepare(`DELETE FROM events WHERE position IN (${oldest}) AND appended_ms < ?`),
    noteTimeBucket: db.prepare(
      `INSERT INTO event_time_buckets (bucket, first_position, last_position) VALUES (?, ?, ?)
       ON CONFLICT (bucket) DO UPDATE SET last_position = MAX(last_position, excluded.last_position)`,
    ),
    noteTimeHour: db.prepare(
      `INSERT INTO event_time_hours (bucket, first_position, last_position) VALUES (?, ?, ?)
       ON CONFLICT (bucket) DO UPDATE SET last_position = MAX(last_position, excluded.last_position)`,
    ),
    timeWindowBounds: db.prepare('SELECT MIN(first_position) AS start, MAX(last_position) AS end FROM event_time_buckets WHERE bucket BETWEEN ? AND ?'),
    timeWindowHours: db.prepare('SELECT MIN(first_position) AS start, MAX(last_position) AS end FROM event_time_hours WHERE bucket BETWEEN ? AND ?'),
    timeWindowPage: db.prepare(TIME_WINDOW_PAGE_SQL),
    firstUnexpired: db.prepare('SELECT position FROM events WHERE position > ? AND appended_ms >= ? ORDER BY position LIMIT 1'),
    countBetween: db.prepare('SELECT COUNT(*) AS n FROM events WHERE position > ? AND position < ?'),
  };
}

function filterValues(filter: EventFilter): SQLInputValue[] {
  return FILTER_CONDITIONS.flatMap(([field]) => {
    const value = filter[field];
    if (value === undefined) return [];
    return Array.isArray(value) ? value : [value];
  });
}

function parseRow(row: PageRow): StoredEvent {
  return storedEvent(row.position, row.backend, JSON.parse(row.envelope));
}
