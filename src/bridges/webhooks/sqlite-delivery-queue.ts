/**
 * The delivery queue in SQLite (`storage.driver: sqlite`): a table `webhook_deliveries` in the
 * gateway's database file, through a connection of its own (`storage/sqlite.ts`). Every state
 * change is committed before the call resolves (WAL, `synchronous=FULL`: survives a killed process
 * and a power loss), so nothing enqueued is lost across a restart; a delivery left `in-flight` by a
 * stop is found by `requeueInFlight` and attempted again (at-least-once).
 */
import type { DatabaseSync, SQLInputValue, StatementSync } from 'node:sqlite';
import {
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
  updated_ms       INTEGER NOT NULL
);
-- Covers due(): choosing among thousands of due rows never reads a row's payload.
CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms, seq, subscription_id, id);
CREATE INDEX IF NOT EXISTS webhook_deliveries_subscription ON webhook_deliveries (subscription_id, seq);
CREATE INDEX IF NOT EXISTS webhook_deliveries_finished ON webhook_deliveries (status, updated_ms);
`;

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
  | 'insert' | 'due' | 'start' | 'finish' | 'uncount' | 'redeliver' | 'get' | 'requeue' | 'nextDue'
  | 'cancelPending' | 'deleteSubscription' | 'list' | 'listStatus' | 'counts' | 'purgeAged' | 'purgeDead',
  StatementSync
>;

/** A `DeliveryQueue` in one SQLite file (or `:memory:`). */
export class SqliteDeliveryQueue implements DeliveryQueue {
  readonly #sqlite: SqliteHandle<Statements>;

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string) {
    this.#sqlite = new SqliteHandle('SqliteDeliveryQueue', path, { schema: SCHEMA, prepare });
  }

  async open(): Promise<void> {
    this.#sqlite.open();
  }

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    return this.#sqlite.transaction((sql) =>
      deliveries.reduce(
        (added, d) => added + Number(sql.insert.run(d.id, d.subscriptionId, d.eventId, d.eventType, d.payload, d.nextAttemptMs, nowMs, nowMs).changes),
        0,
      ),
    );
  }

  async due(nowMs: number, limit: number, excludeSubscriptions: string[]): Promise<DueDelivery[]> {
    const rows = this.#sqlite.statements.due.all(nowMs, JSON.stringify(excludeSubscriptions), limit) as unknown as Row[];
    return rows.map((r) => ({ id: r.id, subscriptionId: r.subscription_id, nextAttemptMs: r.next_attempt_ms }));
  }

  async begin(id: string, nowMs: number): Promise<Delivery | undefined> {
    const row = this.#sqlite.statements.start.get(nowMs, id) as unknown as Row | undefined;
    return row && fromRow(row);
  }

  async finish(id: string, outcome: AttemptOutcome, nowMs: number): Promise<boolean> {
    const sql = this.#sqlite.statements;
    if (outcome.uncount) return Number(sql.uncount.run(outcome.status, outcome.nextAttemptMs ?? null, nowMs, id).changes) > 0;
    const changes = sql.finish.run(
      outcome.status, outcome.nextAttemptMs ?? null, outcome.lastError ?? null, outcome.lastStatus ?? null, nowMs, id,
    ).changes;
    return Number(changes) > 0;
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    return this.#sqlite.transaction((sql) => {
      const redelivered = sql.redeliver.get(nowMs, nowMs, id, subscriptionId) as unknown as Row | undefined;
      if (redelivered) return { outcome: 'redelivered', delivery: fromRow(redelivered) };
      const row = sql.get.get(id, subscriptionId) as unknown as Row | undefined;
      return row ? { outcome: 'busy', delivery: fromRow(row) } : { outcome: 'absent' };
    });
  }

  async requeueInFlight(nowMs: number): Promise<number> {
    return Number(this.#sqlite.statements.requeue.run(nowMs, nowMs).changes);
  }

  async nextDueMs(): Promise<number | undefined> {
    return (this.#sqlite.statements.nextDue.get()?.next as number | null | undefined) ?? undefined;
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    return Number(this.#sqlite.statements.cancelPending.run(subscriptionId).changes);
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    return Number(this.#sqlite.statements.deleteSubscription.run(subscriptionId).changes);
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

  async purge(limits: PurgeLimits): Promise<number> {
    return this.#sqlite.transaction(
      (sql) => Number(sql.purgeAged.run(limits.succeededBeforeMs, limits.deadBeforeMs).changes) + Number(sql.purgeDead.run(limits.maxDead).changes),
    );
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    this.#sqlite.close();
  }

  #rows(statement: StatementSync, ...params: SQLInputValue[]): Delivery[] {
    return (statement.all(...params) as unknown as Row[]).map(fromRow);
  }
}

function prepare(db: DatabaseSync): Statements {
  const table = 'webhook_deliveries';
  return {
    insert: db.prepare(
      `INSERT OR IGNORE INTO ${table} (id, subscription_id, event_id, event_type, payload, status, attempts, next_attempt_ms, created_ms, updated_ms)
       VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?, ?)`,
    ),
    due: db.prepare(
      `SELECT id, subscription_id, next_attempt_ms FROM ${table} WHERE status = 'pending' AND next_attempt_ms <= ?
       AND subscription_id NOT IN (SELECT value FROM json_each(?)) ORDER BY next_attempt_ms, seq LIMIT ?`,
    ),
    start: db.prepare(
      `UPDATE ${table} SET status = 'in-flight', attempts = attempts + 1, updated_ms = ? WHERE id = ? AND status = 'pending' RETURNING ${COLUMNS}`,
    ),
    finish: db.prepare(
      `UPDATE ${table} SET status = ?, next_attempt_ms = COALESCE(?, next_attempt_ms), last_error = ?, last_status = ?, updated_ms = ?
       WHERE id = ? AND status = 'in-flight'`,
    ),
    uncount: db.prepare(
      `UPDATE ${table} SET status = ?, next_attempt_ms = COALESCE(?, next_attempt_ms), attempts = attempts - 1, updated_ms = ?
       WHERE id = ? AND status = 'in-flight'`,
    ),
    redeliver: db.prepare(
      `UPDATE ${table} SET status = 'pending', attempts = 0, next_attempt_ms = ?, updated_ms = ?
       WHERE id = ? AND subscription_id = ? AND status IN ('succeeded', 'dead') RETURNING ${COLUMNS}`,
    ),
    get: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE id = ? AND subscription_id = ?`),
    requeue: db.prepare(`UPDATE ${table} SET status = 'pending', next_attempt_ms = ?, updated_ms = ? WHERE status = 'in-flight'`),
    nextDue: db.prepare(`SELECT MIN(next_attempt_ms) AS next FROM ${table} WHERE status = 'pending'`),
    cancelPending: db.prepare(`DELETE FROM ${table} WHERE subscription_id = ? AND status = 'pending'`),
    deleteSubscription: db.prepare(`DELETE FROM ${table} WHERE subscription_id = ?`),
    list: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE subscription_id = ? AND seq > ? ORDER BY seq LIMIT ?`),
    listStatus: db.prepare(`SELECT ${COLUMNS} FROM ${table} WHERE subscription_id = ? AND status = ? AND seq > ? ORDER BY seq LIMIT ?`),
    counts: db.prepare(`SELECT status, COUNT(*) AS n FROM ${table} GROUP BY status`),
    purgeAged: db.prepare(
      `DELETE FROM ${table} WHERE (status = 'succeeded' AND updated_ms < ?) OR (status = 'dead' AND updated_ms < ?)`,
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
