/**
 * The delivery queue in SQLite (`storage.driver: sqlite`): a table `webhook_deliveries` in the
 * gateway's database file, through a connection of its own (`storage/sqlite.ts`). Every state
 * change is committed before the call resolves (WAL), so it survives a killed process: nothing
 * enqueued is lost across a restart, and a delivery left `in-flight` by a killed process is claimed
 * again when its lease runs out (at-least-once). What an OS crash or power loss may take back, and
 * why that loses nothing, is at `#durable`.
 *
 * Due work (issue 28): which unfinished deliveries each subscription has and when they are due is
 * held in memory (`DeliverySchedule`), built from the table when the queue opens (the unfinished
 * rows, by a partial index on `done = 0`). So a claim reads no table and a state change writes the
 * delivery's row and no index of due work: an enqueue inserts the row, a claim and a retry update
 * it, an outcome that ends it updates it and moves it out of the unfinished index into the
 * succeeded or dead one. This queue must be the only one on its file (one gateway process per
 * SQLite file); a row changed behind its back is refused by its claim token, never claimed twice.
 * A write that fails builds the schedule again from the table.
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import {
  releaseByFinish,
  zeroCounts,
  type AttemptOutcome,
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
import { DeliverySchedule, type Scheduled } from './delivery-schedule.ts';
import { inTransaction, SqliteHandle } from '../../storage/sqlite.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_deliveries (
  seq              INTEGER PRIMARY KEY AUTOINCREMENT,
  id               TEXT NOT NULL UNIQUE,
  subscription_id  TEXT NOT NULL,
  event_id         TEXT NOT NULL,
  event_type       TEXT NOT NULL,
  payload          TEXT NOT NULL,
  status           TEXT NOT NULL,
  attempts         INTEGER NOT NULL,
  next_attempt_ms  INTEGER NOT NULL,
  last_error       TEXT,
  last_status      INTEGER,
  created_ms       INTEGER NOT NULL,
  updated_ms       INTEGER NOT NULL,
  claim            INTEGER NOT NULL DEFAULT 0,
  lease_until_ms   INTEGER,
  done             INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS webhook_deliveries_subscription ON webhook_deliveries (subscription_id, seq);
`;

/**
 * Run after `SCHEMA`: brings a table an earlier version made to the current shape (idempotent), in
 * one transaction, so a migration cut short (killed, refused) leaves the file as it was and runs
 * again whole at the next open.
 */
function migrate(db: DatabaseSync): void {
  inTransaction(db, () => migrateInTransaction(db));
}

function migrateInTransaction(db: DatabaseSync): void {
  const columns = (db.prepare(`PRAGMA table_info(webhook_deliveries)`).all() as Array<{ name: string }>).map((c) => c.name);
  if (!columns.includes('claim')) {
    // Before leased claims: an in-flight delivery has no lease, so it is claimable at once.
    db.exec(`ALTER TABLE webhook_deliveries ADD COLUMN claim INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE webhook_deliveries ADD COLUMN lease_until_ms INTEGER;
      UPDATE webhook_deliveries SET lease_until_ms = 0 WHERE status = 'in-flight';`);
  }
  if (!columns.includes('done')) {
    db.exec(`ALTER TABLE webhook_deliveries ADD COLUMN done INTEGER NOT NULL DEFAULT 0;
      UPDATE webhook_deliveries SET done = 1 WHERE status IN ('succeeded', 'dead');`);
  }
  // One partial index of unfinished rows, whose key a claim or a retry does not change (they leave
  // `done` alone), and one per finished state (purge): a state change touches the row and, when it
  // finishes the delivery, two index entries. The due indexes of earlier versions (pending rows by
  // subscription and due time, leases by subscription and end, a table of lanes) are dropped: the
  // schedule in memory does their work.
  db.exec(`DROP INDEX IF EXISTS webhook_deliveries_due;
    DROP INDEX IF EXISTS webhook_deliveries_lane;
    DROP INDEX IF EXISTS webhook_deliveries_finished;
    DROP INDEX IF EXISTS webhook_deliveries_pending;
    DROP INDEX IF EXISTS webhook_deliveries_leases;
    DROP TABLE IF EXISTS webhook_delivery_lanes;
    CREATE INDEX IF NOT EXISTS webhook_deliveries_unfinished ON webhook_deliveries (seq) WHERE done = 0;
    CREATE INDEX IF NOT EXISTS webhook_deliveries_succeeded ON webhook_deliveries (updated_ms) WHERE status = 'succeeded';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_dead ON webhook_deliveries (updated_ms, seq) WHERE status = 'dead';`);
}

/** WAL pages after which this connection checkpoints (SQLite's default is 1000). */
export const WAL_CHECKPOINT_PAGES = 10_000;

/** Page cache of this connection, KiB (SQLite's default is 2,000). */
export const CACHE_KIB = 16_384;

const COLUMNS = 'seq, id, subscription_id, event_id, event_type, payload, status, attempts, next_attempt_ms, last_error, last_status, created_ms, updated_ms';

interface Row {
  seq: number;
  id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  payload: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_ms: number;
  last_error: string | null;
  last_status: number | null;
  created_ms: number;
  updated_ms: number;
}

/** An unfinished row as the schedule is built from it. */
interface UnfinishedRow {
  seq: number;
  id: string;
  subscription_id: string;
  status: DeliveryStatus;
  next_attempt_ms: number;
  lease_until_ms: number | null;
  claim: number;
}

type Statements = Record<
  | 'insert' | 'take' | 'retry' | 'end' | 'endUncounted' | 'uncount' | 'redeliver' | 'get' | 'unfinishedRows'
  | 'cancelPending' | 'deleteSubscription' | 'list' | 'listStatus' | 'finishedCounts' | 'purgeAged' | 'purgeDead' | 'fsynced' | 'unfsynced',
  StatementSync
>;

/** A `DeliveryQueue` in one SQLite file (or `:memory:`). */
export class SqliteDeliveryQueue implements DeliveryQueue {
  readonly #sqlite: SqliteHandle<Statements>;
  #schedule = new DeliverySchedule();

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string) {
    // NORMAL by default: the frequent claims and outcomes; `#durable` raises it for the rest.
    this.#sqlite = new SqliteHandle('SqliteDeliveryQueue', path, { schema: SCHEMA, prepare, synchronous: 'NORMAL' });
  }

  async open(): Promise<void> {
    if (this.#sqlite.isOpen) return;
    this.#sqlite.open();
    this.#rebuild();
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    return this.#write((sql) => {
      let added = 0;
      for (const d of deliveries) {
        const result = sql.insert.run(d.id, d.subscriptionId, d.eventId, d.eventType, d.payload, d.nextAttemptMs, nowMs, nowMs);
        if (Number(result.changes) === 0) continue;
        this.#schedule.add({ seq: Number(result.lastInsertRowid), id: d.id, subscriptionId: d.subscriptionId, dueMs: d.nextAttemptMs, leaseUntilMs: undefined, claim: 0 }, nowMs);
        added += 1;
      }
      return added;
    });
  }

  async claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    return this.#write((sql) => this.#claimDue(sql, nowMs, limit, leaseMs));
  }

  async finish(attempts: FinishedAttempt[], nowMs: number): Promise<boolean[]> {
    if (attempts.length === 0) return [];
    return this.#write((sql) => this.#recordAll(sql, attempts, nowMs));
  }

  async settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement> {
    return this.#write((sql) => ({ recorded: this.#recordAll(sql, attempts, nowMs), claimed: limit > 0 ? this.#claimDue(sql, nowMs, limit, leaseMs) : [] }));
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    return this.#durable((sql) => {
      const redelivered = sql.redeliver.get(nowMs, nowMs, id, subscriptionId) as unknown as (Row & { claim: number }) | undefined;
      if (redelivered) {
        this.#schedule.add({ seq: redelivered.seq, id, subscriptionId, dueMs: nowMs, leaseUntilMs: undefined, claim: redelivered.claim }, nowMs);
        return { outcome: 'redelivered', delivery: fromRow(redelivered) };
      }
      const row = sql.get.get(id, subscriptionId) as unknown as Row | undefined;
      return row ? { outcome: 'busy', delivery: fromRow(row) } : { outcome: 'absent' };
    });
  }

  release(claims: ClaimRef[], nowMs: number): Promise<number> {
    return releaseByFinish(this, claims, nowMs);
  }

  async nextDueMs(): Promise<number | undefined> {
    return this.#opened().nextDueMs();
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    return this.#durable((sql) => {
      const removed = Number(sql.cancelPending.run(subscriptionId).changes);
      this.#schedule.dropSubscription(subscriptionId, false, Date.now());
      return removed;
    });
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    return this.#durable((sql) => {
      const removed = Number(sql.deleteSubscription.run(subscriptionId).changes);
      this.#schedule.dropSubscription(subscriptionId, true, Date.now());
      return removed;
    });
  }

  async get(subscriptionId: string, id: string): Promise<Delivery | undefined> {
    const row = this.#sqlite.statements.get.get(id, subscriptionId) as unknown as Row | undefined;
    return row && fromRow(row);
  }

  async list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage> {
    const sql = this.#sqlite.statements;
    const rows = options.status === undefined
      ? this.#rows(sql.list, subscriptionId, options.after, options.limit + 1)
      : this.#rows(sql.listStatus, subscriptionId, options.status, options.after, options.limit + 1);
    const deliveries = rows.slice(0, options.limit);
    return rows.length > options.limit ? { deliveries, next: deliveries[deliveries.length - 1].seq } : { deliveries };
  }

  async counts(): Promise<Record<DeliveryStatus, number>> {
    const counts = zeroCounts();
    for (const row of this.#sqlite.statements.finishedCounts.all() as Array<{ status: DeliveryStatus; n: number }>) counts[row.status] = row.n;
    counts['in-flight'] = this.#schedule.inFlight;
    counts.pending = this.#schedule.size - this.#schedule.inFlight;
    return counts;
  }

  async unfinished(): Promise<number> {
    return this.#opened().size;
  }

  async purge(limits: PurgeLimits): Promise<number> {
    return this.#durable(
      (sql) => Number(sql.purgeAged.run(limits.succeededBeforeMs, limits.deadBeforeMs).changes) + Number(sql.purgeDead.run(limits.maxDead).changes),
    );
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    this.#sqlite.close();
    this.#schedule = new DeliverySchedule();
  }

  /** The schedule; throws as the statements do when the queue is not open. */
  #opened(): DeliverySchedule {
    if (!this.#sqlite.isOpen) void this.#sqlite.statements;
    return this.#schedule;
  }

  /** A transaction of `work` (on the connection's `NORMAL`); when it fails, the schedule is built again from the table it left. */
  #write<T>(work: (sql: Statements) => T): T {
    try {
      return this.#sqlite.transaction(work);
    } catch (err) {
      if (this.#sqlite.isOpen) this.#rebuild();
      throw err;
    }
  }

  /**
   * Runs `work` in a transaction committed with an fsync (`synchronous=FULL`): deletions,
   * redeliveries and purges, which answer an operator. Enqueues, claims and outcomes run in plain
   * transactions on the connection's `NORMAL`: they survive a killed process, and an OS crash or
   * power loss can only take back the end of the WAL, in commit order. For claims and outcomes
   * that means the latest attempts are made again (at-least-once, as after any crash; receivers
   * de-duplicate by `webhook-id`). For enqueues (issue 28: an fsync per fan-out page was about 5%
   * of the gateway's CPU per delivery) it means nothing is lost: the fan-out saves its checkpoint in
   * the log of the same file after the enqueue commits, so a lost enqueue takes its checkpoint with
   * it, and the fan-out enqueues those events again (same message ids) from the log. Each `FULL`
   * commit makes every earlier one durable too (one WAL).
   */
  #durable<T>(work: (sql: Statements) => T): T {
    const sql = this.#sqlite.statements;
    sql.fsynced.run();
    try {
      return this.#write(work);
    } finally {
      sql.unfsynced.run();
    }
  }

  /** The schedule of the unfinished rows, as the table holds them now. */
  #rebuild(): void {
    const schedule = new DeliverySchedule();
    const nowMs = Date.now();
    for (const row of this.#sqlite.statements.unfinishedRows.all() as unknown as UnfinishedRow[]) {
      const leased = row.status === 'in-flight';
      schedule.add({ seq: row.seq, id: row.id, subscriptionId: row.subscription_id, dueMs: row.next_attempt_ms, leaseUntilMs: leased ? (row.lease_until_ms ?? 0) : undefined, claim: row.claim }, nowMs);
    }
    this.#schedule = schedule;
  }

  /** `claim` inside a transaction: the schedule picks, each pick's row is leased (refused when its claim token moved). */
  #claimDue(sql: Statements, nowMs: number, limit: number, leaseMs: number): ClaimedDelivery[] {
    return this.#schedule.claim(nowMs, limit, leaseMs, (entry, reclaimed, leaseUntilMs) => {
      const row = sql.take.get(leaseUntilMs, nowMs, entry.seq, entry.claim) as unknown as (Row & { claim: number }) | undefined;
      return row && { ...fromRow(row), claim: row.claim, leaseUntilMs, reclaimed };
    });
  }

  /** `finish` inside a transaction. */
  #recordAll(sql: Statements, attempts: FinishedAttempt[], nowMs: number): boolean[] {
    return attempts.map(({ id, claim, outcome }) => {
      const entry = this.#schedule.get(id);
      if (!record(sql, entry, claim, outcome, nowMs)) return false;
      this.#schedule.settle(id, outcome.status === 'pending' ? (outcome.nextAttemptMs ?? entry!.dueMs) : undefined, nowMs);
      return true;
    });
  }

  #rows(statement: StatementSync, ...params: SQLInputValue[]): Delivery[] {
    return (statement.all(...params) as unknown as Row[]).map(fromRow);
  }
}

/**
 * Records one outcome on the row of `entry` if `claim` is its current claim; true when recorded. A
 * delivery the schedule does not hold (finished, deleted) has no current claim.
 */
function record(sql: Statements, entry: Scheduled | undefined, claim: number, outcome: AttemptOutcome, nowMs: number): boolean {
  if (!entry) return false;
  const { seq } = entry;
  const next = outcome.nextAttemptMs ?? null;
  const error = [outcome.lastError ?? null, outcome.lastStatus ?? null] as const;
  let result;
  if (outcome.status === 'pending') result = outcome.uncount ? sql.uncount.run(next, nowMs, seq, claim) : sql.retry.run(next, ...error, nowMs, seq, claim);
  else result = outcome.uncount ? sql.endUncounted.run(outcome.status, nowMs, seq, claim) : sql.end.run(outcome.status, ...error, nowMs, seq, claim);
  return Number(result.changes) > 0;
}

function prepare(db: DatabaseSync): Statements {
  migrate(db);
  // Claims and outcomes are many small transactions rewriting the same hot pages (index leaves):
  // a checkpoint every WAL_CHECKPOINT_PAGES instead of SQLite's 1000 copies each hot page once per
  // longer window (measured: about 4x less time per transaction), for a WAL of up to 40 MiB.
  db.exec(`PRAGMA wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  // Message ids are UUIDs: each enqueue inserts into the id index at a random place, and the table
  // keeps an hour of succeeded rows. A page cache of CACHE_KIB instead of SQLite's 2 MiB keeps more
  // of that index in memory (queue alone, 64,000 deliveries: 32.9 / 33.2 -> 30.0 / 29.9 us each).
  db.exec(`PRAGMA cache_size = -${CACHE_KIB}`);
  const table = 'webhook_deliveries';
  // A state change names the row by seq and its current claim (an older claim is refused). `done`
  // is set only where it changes, so a claim or a retry leaves the unfinished index alone.
  const current = `seq = ? AND status = 'in-flight' AND claim = ?`;
  return {
    insert: db.prepare(
      `INSERT OR IGNORE INTO ${table} (id, subscription_id, event_id, event_type, payload, status, attempts, next_attempt_ms, created_ms, updated_ms)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
    ),
    take: db.prepare(
      `UPDATE ${table} SET status = 'in-flight', attempts = attempts + 1, claim = claim + 1, lease_until_ms = ?, updated_ms = ?
       WHERE seq = ? AND claim = ? AND status IN ('pending', 'in-flight') RETURNING ${COLUMNS}, claim`,
    ),
    retry: db.prepare(
      `UPDATE ${table} SET status = 'pending', next_attempt_ms = COALESCE(?, next_attempt_ms), last_error = ?, last_status = ?, updated_ms = ?,
       lease_until_ms = NULL WHERE ${current}`,
    ),
    end: db.prepare(
      `UPDATE ${table} SET status = ?, done = 1, last_error = ?, last_status = ?, updated_ms = ?, lease_until_ms = NULL WHERE ${current}`,
    ),
    endUncounted: db.prepare(`UPDATE ${table} SET status = ?, done = 1, attempts = attempts - 1, updated_ms = ?, lease_until_ms = NULL WHERE ${current}`),
    uncount: db.prepare(
      `UPDATE ${table} SET status = 'pending', next_attempt_ms = COALESCE(?, next_attempt_ms), attempts = attempts - 1, updated_ms = ?,
       lease_until_ms = NULL WHERE ${current}`,
    ),
    unfinishedRows: db.prepare(`SELECT seq, id, subscription_id, status, next_attempt_ms, lease_until_ms, claim FROM ${table} WHERE done = 0`),
    fsynced: db.prepare('PRAGMA synchronous = FULL'),
    unfsynced: db.prepare('PRAGMA synchronous = NORMAL'),
    redeliver: db.prepare(
      `UPDATE ${table} SET status = 'pending', done = 0, attempts = 0, next_attempt_ms = ?, updated_ms = ?
       WHERE id = ? AND subscription_id = ? AND done = 1 RETURNING ${COLUMNS}, claim`,
    ),
    get: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE id = ? AND subscription_id = ?`),
    cancelPending: db.prepare(`DELETE FROM ${table} WHERE subscription_id = ? AND status = 'pending'`),
    deleteSubscription: db.prepare(`DELETE FROM ${table} WHERE subscription_id = ?`),
    list: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE subscription_id = ? AND seq > ? ORDER BY seq LIMIT ?`),
    listStatus: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE subscription_id = ? AND status = ? AND seq > ? ORDER BY seq LIMIT ?`),
    // Each finished state counted on its own partial index; unfinished ones are the schedule's.
    finishedCounts: db.prepare(
      `SELECT 'succeeded' AS status, COUNT(*) AS n FROM ${table} WHERE status = 'succeeded' UNION ALL SELECT 'dead', COUNT(*) FROM ${table} WHERE status = 'dead'`,
    ),
    purgeAged: db.prepare(
      `DELETE FROM ${table} WHERE seq IN (SELECT seq FROM ${table} WHERE status = 'succeeded' AND updated_ms < ?
       UNION ALL SELECT seq FROM ${table} WHERE status = 'dead' AND updated_ms < ?)`,
    ),
    purgeDead: db.prepare(
      `DELETE FROM ${table} WHERE seq IN (SELECT seq FROM ${table} WHERE status = 'dead' ORDER BY updated_ms DESC, seq DESC LIMIT -1 OFFSET ?)`,
    ),
  };
}

function fromRow(row: Row): Delivery {
  const delivery: Delivery = {
    seq: row.seq,
    id: row.id,
    subscriptionId: row.subscription_id,
    eventId: row.event_id,
    eventType: row.event_type,
    payload: row.payload,
    status: row.status,
    attempts: row.attempts,
    nextAttemptMs: row.next_attempt_ms,
    createdMs: row.created_ms,
    updatedMs: row.updated_ms,
  };
  if (row.last_error !== null) delivery.lastError = row.last_error;
  if (row.last_status !== null) delivery.lastStatus = row.last_status;
  return delivery;
}
