/**
 * The delivery queue in SQLite (`storage.driver: sqlite`): a table `webhook_deliveries` in the
 * gateway's database file, through a connection of its own (`storage/sqlite.ts`). Every state
 * change is committed before the call resolves (WAL), so it survives a killed process: nothing
 * enqueued is lost across a restart, and a delivery left `in-flight` by a killed process is claimed
 * again when its lease runs out (at-least-once). What an OS crash or power loss may take back, and
 * why that loses nothing, is at `#durable`.
 *
 * Due index: `webhook_delivery_lanes` holds, per subscription with unfinished deliveries, when it
 * can next give work (`ready_ms`, see `DeliveryQueue`). `claim` reads lanes in that order and takes
 * each lane's due deliveries from the `(subscription_id, next_attempt_ms, seq)` index of pending
 * rows, so a subscription with a large backlog costs one index seek, and one at its
 * `PER_SUBSCRIPTION` limit is not looked at before its first lease ends.
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import {
  PER_SUBSCRIPTION,
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
import { SqliteHandle } from '../../storage/sqlite.ts';

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
  lease_until_ms   INTEGER
);
CREATE TABLE IF NOT EXISTS webhook_delivery_lanes (
  subscription_id  TEXT PRIMARY KEY,
  ready_ms         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS webhook_delivery_lanes_ready ON webhook_delivery_lanes (ready_ms, subscription_id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_subscription ON webhook_deliveries (subscription_id, seq);
`;

/** Run after `SCHEMA`: brings a table made before leased claims to the current shape (idempotent). */
function migrate(db: DatabaseSync): void {
  const columns = (db.prepare(`PRAGMA table_info(webhook_deliveries)`).all() as Array<{ name: string }>).map((c) => c.name);
  if (!columns.includes('claim')) {
    db.exec(`ALTER TABLE webhook_deliveries ADD COLUMN claim INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE webhook_deliveries ADD COLUMN lease_until_ms INTEGER;
      UPDATE webhook_deliveries SET lease_until_ms = 0 WHERE status = 'in-flight';
      DROP INDEX IF EXISTS webhook_deliveries_due;`);
  }
  // One partial index per state (issue 28): a state change moves a row out of one small index and
  // into another, and touches nothing else (no index holds every row by status, so the pages a
  // claim or an outcome writes are the row's, the two indexes', and the lane's). Pending deliveries
  // by subscription and due time; in-flight ones by subscription and lease end; finished ones by
  // status and age (purge). The indexes of earlier versions (every row by status) are dropped.
  db.exec(`DROP INDEX IF EXISTS webhook_deliveries_lane;
    DROP INDEX IF EXISTS webhook_deliveries_finished;
    CREATE INDEX IF NOT EXISTS webhook_deliveries_pending ON webhook_deliveries (subscription_id, next_attempt_ms, seq) WHERE status = 'pending';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_leases ON webhook_deliveries (subscription_id, lease_until_ms, seq) WHERE status = 'in-flight';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_succeeded ON webhook_deliveries (updated_ms) WHERE status = 'succeeded';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_dead ON webhook_deliveries (updated_ms, seq) WHERE status = 'dead';`);
  if (!columns.includes('claim')) {
    const subscriptions = db.prepare(`SELECT DISTINCT subscription_id AS id FROM webhook_deliveries WHERE status IN ('pending', 'in-flight')`).all();
    const insert = db.prepare(`INSERT OR IGNORE INTO webhook_delivery_lanes (subscription_id, ready_ms) VALUES (?, 0)`);
    for (const row of subscriptions) insert.run(row.id as string);
  }
}

/** WAL pages after which this connection checkpoints (SQLite's default is 1000). */
export const WAL_CHECKPOINT_PAGES = 10_000;

const STATUSES: DeliveryStatus[] = ['pending', 'in-flight', 'succeeded', 'dead'];

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

type Statements = Record<
  | 'insert' | 'readyLanes' | 'expired' | 'duePending' | 'take' | 'finish' | 'uncount' | 'redeliver' | 'get'
  | 'liveLeases' | 'firstLease' | 'firstPending' | 'setLane' | 'deleteLane' | 'nextDue'
  | 'cancelPending' | 'deleteSubscription' | 'list' | 'listStatus' | 'counts' | 'unfinished' | 'purgeAged' | 'purgeDead' | 'fsynced' | 'unfsynced',
  StatementSync
>;

/** A `DeliveryQueue` in one SQLite file (or `:memory:`). */
export class SqliteDeliveryQueue implements DeliveryQueue {
  readonly #sqlite: SqliteHandle<Statements>;

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string) {
    // NORMAL by default: the frequent claims and outcomes; `#durable` raises it for the rest.
    this.#sqlite = new SqliteHandle('SqliteDeliveryQueue', path, { schema: SCHEMA, prepare, synchronous: 'NORMAL' });
  }

  async open(): Promise<void> {
    this.#sqlite.open();
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    return this.#sqlite.transaction((sql) => {
      let added = 0;
      const touched = new Set<string>();
      for (const d of deliveries) {
        const changes = Number(sql.insert.run(d.id, d.subscriptionId, d.eventId, d.eventType, d.payload, d.nextAttemptMs, nowMs, nowMs).changes);
        if (changes > 0) touched.add(d.subscriptionId);
        added += changes;
      }
      for (const subscriptionId of touched) updateLane(sql, subscriptionId, nowMs);
      return added;
    });
  }

  async claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    if (limit <= 0) return [];
    return this.#sqlite.transaction((sql) => claimDue(sql, nowMs, limit, leaseMs));
  }

  async finish(attempts: FinishedAttempt[], nowMs: number): Promise<boolean[]> {
    if (attempts.length === 0) return [];
    return this.#sqlite.transaction((sql) => recordAll(sql, attempts, nowMs));
  }

  async settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement> {
    return this.#sqlite.transaction((sql) => ({ recorded: recordAll(sql, attempts, nowMs), claimed: claimDue(sql, nowMs, limit, leaseMs) }));
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    return this.#durable((sql) => {
      const redelivered = sql.redeliver.get(nowMs, nowMs, id, subscriptionId) as unknown as Row | undefined;
      if (redelivered) {
        updateLane(sql, subscriptionId, nowMs);
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
    return (this.#sqlite.statements.nextDue.get()?.next as number | null | undefined) ?? undefined;
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    return this.#deleteOf(subscriptionId, 'cancelPending');
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    return this.#deleteOf(subscriptionId, 'deleteSubscription');
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
    for (const row of this.#sqlite.statements.counts.all() as Array<{ status: DeliveryStatus; n: number }>) counts[row.status] = row.n;
    return counts;
  }

  async unfinished(): Promise<number> {
    return Number(this.#sqlite.statements.unfinished.get()!.n);
  }

  async purge(limits: PurgeLimits): Promise<number> {
    return this.#durable(
      (sql) => Number(sql.purgeAged.run(limits.succeededBeforeMs, limits.deadBeforeMs).changes) + Number(sql.purgeDead.run(limits.maxDead).changes),
    );
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    this.#sqlite.close();
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
      return this.#sqlite.transaction(work);
    } finally {
      sql.unfsynced.run();
    }
  }

  /** Deletes deliveries of a subscription with `statement`, and updates its lane, in one transaction. */
  #deleteOf(subscriptionId: string, statement: 'cancelPending' | 'deleteSubscription'): number {
    return this.#durable((sql) => {
      const removed = Number(sql[statement].run(subscriptionId).changes);
      updateLane(sql, subscriptionId, Date.now());
      return removed;
    });
  }

  #rows(statement: StatementSync, ...params: SQLInputValue[]): Delivery[] {
    return (statement.all(...params) as unknown as Row[]).map(fromRow);
  }
}

/** Live leases (ending after `nowMs`) of a subscription. */
function liveLeases(sql: Statements, subscriptionId: string, nowMs: number): number {
  return Number(sql.liveLeases.get(subscriptionId, nowMs)!.n);
}

/** `claim` inside a transaction. Each lane read gives at least one delivery or is moved past `nowMs`, so the loop ends. */
function claimDue(sql: Statements, nowMs: number, limit: number, leaseMs: number): ClaimedDelivery[] {
  const claimed: ClaimedDelivery[] = [];
  while (claimed.length < limit) {
    const lanes = sql.readyLanes.all(nowMs, limit - claimed.length) as Array<{ subscription_id: string }>;
    const before = claimed.length;
    for (const { subscription_id: subscriptionId } of lanes) {
      const free = Math.min(PER_SUBSCRIPTION - liveLeases(sql, subscriptionId, nowMs), limit - claimed.length);
      if (free > 0) {
        const expired = sql.expired.all(subscriptionId, nowMs, free) as Array<{ seq: number }>;
        const due = sql.duePending.all(subscriptionId, nowMs, free - expired.length) as Array<{ seq: number }>;
        for (const { seq } of expired) claimed.push(take(sql, seq, nowMs, leaseMs, true));
        for (const { seq } of due) claimed.push(take(sql, seq, nowMs, leaseMs, false));
      }
      updateLane(sql, subscriptionId, nowMs);
    }
    if (lanes.length === 0 || claimed.length === before) break;
  }
  return claimed;
}

/** `finish` inside a transaction. */
function recordAll(sql: Statements, attempts: FinishedAttempt[], nowMs: number): boolean[] {
  const touched = new Set<string>();
  const recorded = attempts.map(({ id, claim, outcome }) => {
    const row = record(sql, id, claim, outcome, nowMs);
    if (row) touched.add(row.subscription_id);
    return row !== undefined;
  });
  for (const subscriptionId of touched) updateLane(sql, subscriptionId, nowMs);
  return recorded;
}

/** Claims the row `seq`: in flight under a new claim token and lease, its attempt counted. */
function take(sql: Statements, seq: number, nowMs: number, leaseMs: number, reclaimed: boolean): ClaimedDelivery {
  const row = sql.take.get(nowMs + leaseMs, nowMs, seq) as unknown as Row & { claim: number; lease_until_ms: number };
  return { ...fromRow(row), claim: row.claim, leaseUntilMs: row.lease_until_ms, reclaimed };
}

/** Records one outcome if `claim` is the delivery's current claim; returns the row's subscription, or undefined. */
function record(sql: Statements, id: string, claim: number, outcome: AttemptOutcome, nowMs: number): { subscription_id: string } | undefined {
  const next = outcome.nextAttemptMs ?? null;
  const row = outcome.uncount
    ? sql.uncount.get(outcome.status, next, nowMs, id, claim)
    : sql.finish.get(outcome.status, next, outcome.lastError ?? null, outcome.lastStatus ?? null, nowMs, id, claim);
  return row as { subscription_id: string } | undefined;
}

/**
 * Sets when a subscription's lane can next give work: at `PER_SUBSCRIPTION` live leases, the
 * earliest of them to end; otherwise its earliest due delivery or lease end (an expired lease is
 * claimable). Each read is one index seek; a lane with nothing unfinished is removed.
 */
function updateLane(sql: Statements, subscriptionId: string, nowMs: number): void {
  const first = (statement: StatementSync, ...params: SQLInputValue[]) => statement.get(subscriptionId, ...params)?.at as number | null | undefined;
  let readyMs: number | null | undefined;
  if (liveLeases(sql, subscriptionId, nowMs) >= PER_SUBSCRIPTION) readyMs = first(sql.firstLease, nowMs);
  else {
    const candidates = [first(sql.firstLease, -1), first(sql.firstPending)].filter((at): at is number => typeof at === 'number');
    readyMs = candidates.length > 0 ? Math.min(...candidates) : undefined;
  }
  if (readyMs === null || readyMs === undefined) sql.deleteLane.run(subscriptionId);
  else sql.setLane.run(subscriptionId, readyMs);
}

function prepare(db: DatabaseSync): Statements {
  migrate(db);
  // Claims and outcomes are many small transactions rewriting the same hot pages (lanes, index
  // leaves): a checkpoint every WAL_CHECKPOINT_PAGES instead of SQLite's 1000 copies each hot page
  // once per longer window (measured: about 4x less time per transaction), for a WAL of up to 40 MiB.
  db.exec(`PRAGMA wal_autocheckpoint = ${WAL_CHECKPOINT_PAGES}`);
  const table = 'webhook_deliveries';
  const current = `id = ? AND status = 'in-flight' AND claim = ? RETURNING subscription_id`;
  return {
    insert: db.prepare(
      `INSERT OR IGNORE INTO ${table} (id, subscription_id, event_id, event_type, payload, status, attempts, next_attempt_ms, created_ms, updated_ms)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
    ),
    readyLanes: db.prepare(`SELECT subscription_id FROM webhook_delivery_lanes WHERE ready_ms <= ? ORDER BY ready_ms, subscription_id LIMIT ?`),
    expired: db.prepare(
      `SELECT seq FROM ${table} WHERE subscription_id = ? AND status = 'in-flight' AND lease_until_ms <= ? ORDER BY lease_until_ms, seq LIMIT ?`,
    ),
    duePending: db.prepare(
      `SELECT seq FROM ${table} WHERE subscription_id = ? AND status = 'pending' AND next_attempt_ms <= ? ORDER BY next_attempt_ms, seq LIMIT ?`,
    ),
    take: db.prepare(
      `UPDATE ${table} SET status = 'in-flight', attempts = attempts + 1, claim = claim + 1, lease_until_ms = ?, updated_ms = ?
       WHERE seq = ? RETURNING ${COLUMNS}, claim, lease_until_ms`,
    ),
    finish: db.prepare(
      `UPDATE ${table} SET status = ?, next_attempt_ms = COALESCE(?, next_attempt_ms), last_error = ?, last_status = ?, updated_ms = ?,
       lease_until_ms = NULL WHERE ${current}`,
    ),
    uncount: db.prepare(
      `UPDATE ${table} SET status = ?, next_attempt_ms = COALESCE(?, next_attempt_ms), attempts = attempts - 1, updated_ms = ?,
       lease_until_ms = NULL WHERE ${current}`,
    ),
    liveLeases: db.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE subscription_id = ? AND status = 'in-flight' AND lease_until_ms > ?`),
    firstLease: db.prepare(`SELECT MIN(lease_until_ms) AS at FROM ${table} WHERE subscription_id = ? AND status = 'in-flight' AND lease_until_ms > ?`),
    firstPending: db.prepare(`SELECT MIN(next_attempt_ms) AS at FROM ${table} WHERE subscription_id = ? AND status = 'pending'`),
    setLane: db.prepare(
      `INSERT INTO webhook_delivery_lanes (subscription_id, ready_ms) VALUES (?, ?) ON CONFLICT (subscription_id) DO UPDATE SET ready_ms = excluded.ready_ms`,
    ),
    deleteLane: db.prepare(`DELETE FROM webhook_delivery_lanes WHERE subscription_id = ?`),
    nextDue: db.prepare(`SELECT MIN(ready_ms) AS next FROM webhook_delivery_lanes`),
    fsynced: db.prepare('PRAGMA synchronous = FULL'),
    unfsynced: db.prepare('PRAGMA synchronous = NORMAL'),
    redeliver: db.prepare(
      `UPDATE ${table} SET status = 'pending', attempts = 0, next_attempt_ms = ?, updated_ms = ?
       WHERE id = ? AND subscription_id = ? AND status IN ('succeeded', 'dead') RETURNING ${COLUMNS}`,
    ),
    get: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE id = ? AND subscription_id = ?`),
    cancelPending: db.prepare(`DELETE FROM ${table} WHERE subscription_id = ? AND status = 'pending'`),
    deleteSubscription: db.prepare(`DELETE FROM ${table} WHERE subscription_id = ?`),
    list: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE subscription_id = ? AND seq > ? ORDER BY seq LIMIT ?`),
    listStatus: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE subscription_id = ? AND status = ? AND seq > ? ORDER BY seq LIMIT ?`),
    // Each state counted on its own partial index (the terms must name one status to use it).
    counts: db.prepare(
      `${STATUSES.map((status) => `SELECT '${status}' AS status, COUNT(*) AS n FROM ${table} WHERE status = '${status}'`).join(' UNION ALL ')}`,
    ),
    unfinished: db.prepare(
      `SELECT (SELECT COUNT(*) FROM ${table} WHERE status = 'pending') + (SELECT COUNT(*) FROM ${table} WHERE status = 'in-flight') AS n`,
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
