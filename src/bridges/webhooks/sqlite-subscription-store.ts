/**
 * Subscriptions in SQLite (`storage.driver: sqlite`): a table `webhook_subscriptions` in the
 * gateway's database file, through a connection of its own (WAL, `busy_timeout`), beside the
 * event log's. The secret is stored as given, because every delivery signs with it. Health (the
 * failing streak), the disabled state and a rotated-out secret are columns of the same row; each
 * change of them is one transaction.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { addMissingColumns, SqliteHandle } from '../../storage/sqlite.ts';
import type { DisabledReason, FailingStreak, Recovery, StatusChange, Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS webhook_subscriptions (
  id          TEXT PRIMARY KEY,
  principal   TEXT NOT NULL,
  service_id  TEXT,
  url         TEXT NOT NULL,
  secret      TEXT,
  types       TEXT,
  status      TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  after_pos   INTEGER NOT NULL,
  seq         INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS webhook_subscriptions_principal ON webhook_subscriptions (principal, seq);
CREATE INDEX IF NOT EXISTS webhook_subscriptions_service ON webhook_subscriptions (service_id);
CREATE TABLE IF NOT EXISTS webhook_recoveries (
  id              TEXT PRIMARY KEY,
  subscription_id TEXT NOT NULL,
  status          TEXT NOT NULL,
  lease_owner     TEXT,
  lease_until_ms  INTEGER,
  body            TEXT NOT NULL
);
CREATE UNIQUE INDEX IF NOT EXISTS webhook_recoveries_running ON webhook_recoveries (subscription_id) WHERE status = 'running';
`;

/** Columns added after the first release (issue 28), with their SQL types. */
const ADDED_COLUMNS: Array<[string, string]> = [
  ['disabled_at_ms', 'INTEGER'],
  ['disabled_reason', 'TEXT'],
  ['failures', 'INTEGER NOT NULL DEFAULT 0'],
  ['failing_since_ms', 'INTEGER'],
  ['previous_secret', 'TEXT'],
  ['previous_secret_until_ms', 'INTEGER'],
  ['rate_per_second', 'REAL'],
  ['grants', 'TEXT'],
];

/** Brings a table an older version wrote up to date. */
function migrate(db: DatabaseSync): void {
  addMissingColumns(db, 'webhook_subscriptions', ADDED_COLUMNS);
  db.exec('CREATE INDEX IF NOT EXISTS webhook_subscriptions_previous_secret ON webhook_subscriptions (previous_secret_until_ms) WHERE previous_secret_until_ms IS NOT NULL');
}

interface Row {
  id: string;
  principal: string;
  service_id: string | null;
  url: string;
  secret: string | null;
  types: string | null;
  status: SubscriptionStatus;
  created_at: string;
  after_pos: number;
  disabled_at_ms: number | null;
  disabled_reason: DisabledReason | null;
  failures: number;
  failing_since_ms: number | null;
  previous_secret: string | null;
  previous_secret_until_ms: number | null;
  rate_per_second: number | null;
  grants: string | null;
}

interface Statements {
  insert: StatementSync;
  get: StatementSync;
  byPrincipal: StatementSync;
  active: StatementSync;
  disable: StatementSync;
  enable: StatementSync;
  streak: StatementSync;
  fail: StatementSync;
  succeed: StatementSync;
  rotate: StatementSync;
  dropSecrets: StatementSync;
  delete: StatementSync;
  byService: StatementSync;
  deleteByService: StatementSync;
  runningRecovery: StatementSync;
  insertRecovery: StatementSync;
  getRecovery: StatementSync;
  freeRecovery: StatementSync;
  leaseRecovery: StatementSync;
  saveRecovery: StatementSync;
}

/** A `SubscriptionStore` in one SQLite file (or `:memory:`). */
export class SqliteSubscriptionStore implements SubscriptionStore {
  readonly #sqlite: SqliteHandle<Statements>;

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string) {
    this.#sqlite = new SqliteHandle('SqliteSubscriptionStore', path, { schema: SCHEMA, migrate, prepare });
  }

  async open(): Promise<void> {
    this.#sqlite.open();
  }

  async create(s: Subscription): Promise<void> {
    this.#sqlite.statements.insert.run(
      s.id, s.principal, s.serviceId ?? null, s.url, s.secret ?? null, s.types ? JSON.stringify(s.types) : null, s.status, s.createdAt, s.afterPosition,
      s.disabled?.atMs ?? null, s.disabled?.reason ?? null, s.failing?.failures ?? 0, s.failing?.sinceMs ?? null,
      s.previousSecret?.secret ?? null, s.previousSecret?.untilMs ?? null, s.rateLimit?.perSecond ?? null,
      s.grants ? JSON.stringify(s.grants) : null,
    );
  }

  async get(id: string): Promise<Subscription | undefined> {
    const row = this.#sqlite.statements.get.get(id) as unknown as Row | undefined;
    return row && fromRow(row);
  }

  async listByPrincipal(principal: string): Promise<Subscription[]> {
    return (this.#sqlite.statements.byPrincipal.all(principal) as unknown as Row[]).map(fromRow);
  }

  async listActive(): Promise<Subscription[]> {
    return (this.#sqlite.statements.active.all() as unknown as Row[]).map(fromRow);
  }

  async setStatus(id: string, status: SubscriptionStatus, change: StatusChange): Promise<boolean> {
    const sql = this.#sqlite.statements;
    const result = status === 'disabled' ? sql.disable.run(change.atMs, change.reason ?? 'failing', id) : sql.enable.run(id);
    return Number(result.changes) > 0;
  }

  async recordAttempt(id: string, succeeded: boolean, nowMs: number): Promise<FailingStreak | undefined> {
    return this.#sqlite.transaction((sql) => {
      const before = sql.streak.get(id) as { failures: number; failing_since_ms: number | null } | undefined;
      if (!before) return undefined;
      if (succeeded) {
        if (before.failures === 0) return undefined;
        sql.succeed.run(id);
        return { failures: before.failures, sinceMs: before.failing_since_ms ?? nowMs };
      }
      sql.fail.run(nowMs, id);
      return { failures: before.failures + 1, sinceMs: before.failing_since_ms ?? nowMs };
    });
  }

  async rotateSecret(id: string, secret: string, previousUntilMs: number): Promise<boolean> {
    return Number(this.#sqlite.statements.rotate.run(previousUntilMs, secret, id).changes) > 0;
  }

  async dropExpiredSecrets(nowMs: number): Promise<number> {
    return Number(this.#sqlite.statements.dropSecrets.run(nowMs).changes);
  }

  async startRecovery(recovery: Recovery): Promise<string | undefined> {
    return this.#sqlite.transaction((sql) => {
      const running = sql.runningRecovery.get(recovery.subscriptionId) as { id: string } | undefined;
      if (running) return running.id;
      sql.insertRecovery.run(recovery.id, recovery.subscriptionId, recovery.status, JSON.stringify(recovery));
      return undefined;
    });
  }

  async getRecovery(id: string): Promise<Recovery | undefined> {
    const row = this.#sqlite.statements.getRecovery.get(id) as { body: string } | undefined;
    return row && (JSON.parse(row.body) as Recovery);
  }

  async claimRecovery(owner: string, nowMs: number, leaseMs: number): Promise<Recovery | undefined> {
    return this.#sqlite.transaction((sql) => {
      const row = sql.freeRecovery.get(nowMs) as { id: string; body: string } | undefined;
      if (!row) return undefined;
      sql.leaseRecovery.run(owner, nowMs + leaseMs, row.id);
      return JSON.parse(row.body) as Recovery;
    });
  }

  async saveRecovery(recovery: Recovery, owner: string, nowMs: number, leaseMs: number, release = false): Promise<boolean> {
    const free = release || recovery.status !== 'running';
    const result = this.#sqlite.statements.saveRecovery.run(recovery.status, free ? null : owner, free ? null : nowMs + leaseMs, JSON.stringify(recovery), recovery.id, owner);
    return Number(result.changes) > 0;
  }

  async delete(id: string): Promise<boolean> {
    return Number(this.#sqlite.statements.delete.run(id).changes) > 0;
  }

  async deleteByService(serviceId: string): Promise<string[]> {
    const sql = this.#sqlite.statements;
    const ids = (sql.byService.all(serviceId) as Array<{ id: string }>).map((r) => r.id);
    sql.deleteByService.run(serviceId);
    return ids;
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    this.#sqlite.close();
  }
}

function prepare(db: DatabaseSync): Statements {
  const columns = 'id, principal, service_id, url, secret, types, status, created_at, after_pos, disabled_at_ms, disabled_reason, failures, failing_since_ms, previous_secret, previous_secret_until_ms, rate_per_second, grants';
  return {
    insert: db.prepare(
      `INSERT INTO webhook_subscriptions (${columns}, seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM webhook_subscriptions))`,
    ),
    get: db.prepare(`SELECT ${columns} FROM webhook_subscriptions WHERE id = ?`),
    byPrincipal: db.prepare(`SELECT ${columns} FROM webhook_subscriptions WHERE principal = ? ORDER BY seq`),
    active: db.prepare(`SELECT ${columns} FROM webhook_subscriptions WHERE status = 'active' ORDER BY seq`),
    disable: db.prepare("UPDATE webhook_subscriptions SET status = 'disabled', disabled_at_ms = ?, disabled_reason = ? WHERE id = ? AND status <> 'disabled'"),
    enable: db.prepare(
      "UPDATE webhook_subscriptions SET status = 'active', disabled_at_ms = NULL, disabled_reason = NULL, failures = 0, failing_since_ms = NULL WHERE id = ? AND status <> 'active'",
    ),
    streak: db.prepare('SELECT failures, failing_since_ms FROM webhook_subscriptions WHERE id = ?'),
    fail: db.prepare('UPDATE webhook_subscriptions SET failures = failures + 1, failing_since_ms = COALESCE(failing_since_ms, ?) WHERE id = ?'),
    succeed: db.prepare('UPDATE webhook_subscriptions SET failures = 0, failing_since_ms = NULL WHERE id = ?'),
    rotate: db.prepare(
      `UPDATE webhook_subscriptions SET previous_secret = secret,
         previous_secret_until_ms = CASE WHEN secret IS NULL THEN NULL ELSE ? END, secret = ? WHERE id = ?`,
    ),
    dropSecrets: db.prepare('UPDATE webhook_subscriptions SET previous_secret = NULL, previous_secret_until_ms = NULL WHERE previous_secret_until_ms <= ?'),
    delete: db.prepare('DELETE FROM webhook_subscriptions WHERE id = ?'),
    byService: db.prepare('SELECT id FROM webhook_subscriptions WHERE service_id = ?'),
    deleteByService: db.prepare('DELETE FROM webhook_subscriptions WHERE service_id = ?'),
    runningRecovery: db.prepare("SELECT id FROM webhook_recoveries WHERE subscription_id = ? AND status = 'running'"),
    insertRecovery: db.prepare('INSERT INTO webhook_recoveries (id, subscription_id, status, body) VALUES (?, ?, ?, ?)'),
    getRecovery: db.prepare('SELECT body FROM webhook_recoveries WHERE id = ?'),
    freeRecovery: db.prepare(
      "SELECT id, body FROM webhook_recoveries WHERE status = 'running' AND (lease_until_ms IS NULL OR lease_until_ms <= ?) ORDER BY rowid LIMIT 1",
    ),
    leaseRecovery: db.prepare('UPDATE webhook_recoveries SET lease_owner = ?, lease_until_ms = ? WHERE id = ?'),
    saveRecovery: db.prepare('UPDATE webhook_recoveries SET status = ?, lease_owner = ?, lease_until_ms = ?, body = ? WHERE id = ? AND lease_owner = ?'),
  };
}

function fromRow(row: Row): Subscription {
  const subscription: Subscription = { id: row.id, principal: row.principal, url: row.url, status: row.status, createdAt: row.created_at, afterPosition: row.after_pos };
  if (row.service_id !== null) subscription.serviceId = row.service_id;
  if (row.secret !== null) subscription.secret = row.secret;
  if (row.types !== null) subscription.types = JSON.parse(row.types) as string[];
  if (row.grants !== null) subscription.grants = JSON.parse(row.grants) as string[];
  if (row.disabled_at_ms !== null) subscription.disabled = { atMs: row.disabled_at_ms, reason: row.disabled_reason ?? 'failing' };
  if (row.failures > 0) subscription.failing = { failures: row.failures, sinceMs: row.failing_since_ms ?? 0 };
  if (row.rate_per_second !== null) subscription.rateLimit = { perSecond: row.rate_per_second };
  if (row.previous_secret !== null && row.previous_secret_until_ms !== null) subscription.previousSecret = { secret: row.previous_secret, untilMs: row.previous_secret_until_ms };
  return subscription;
}
