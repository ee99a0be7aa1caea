/**
 * Subscriptions in SQLite (`storage.driver: sqlite`): a table `webhook_subscriptions` in the
 * gateway's database file, through a connection of its own (WAL, `busy_timeout`), beside the
 * event log's. The secret is stored as given, because every delivery signs with it.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { SqliteHandle } from '../../storage/sqlite.ts';
import type { Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

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
`;

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
}

interface Statements {
  insert: StatementSync;
  get: StatementSync;
  byPrincipal: StatementSync;
  active: StatementSync;
  setStatus: StatementSync;
  delete: StatementSync;
  byService: StatementSync;
  deleteByService: StatementSync;
}

/** A `SubscriptionStore` in one SQLite file (or `:memory:`). */
export class SqliteSubscriptionStore implements SubscriptionStore {
  readonly #sqlite: SqliteHandle<Statements>;

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string) {
    this.#sqlite = new SqliteHandle('SqliteSubscriptionStore', path, { schema: SCHEMA, prepare });
  }

  async open(): Promise<void> {
    this.#sqlite.open();
  }

  async create(s: Subscription): Promise<void> {
    this.#sqlite.statements.insert.run(
      s.id, s.principal, s.serviceId ?? null, s.url, s.secret ?? null, s.types ? JSON.stringify(s.types) : null, s.status, s.createdAt, s.afterPosition,
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

  async setStatus(id: string, status: SubscriptionStatus): Promise<boolean> {
    return Number(this.#sqlite.statements.setStatus.run(status, id).changes) > 0;
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
  const columns = 'id, principal, service_id, url, secret, types, status, created_at, after_pos';
  return {
    insert: db.prepare(
      `INSERT INTO webhook_subscriptions (${columns}, seq)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM webhook_subscriptions))`,
    ),
    get: db.prepare(`SELECT ${columns} FROM webhook_subscriptions WHERE id = ?`),
    byPrincipal: db.prepare(`SELECT ${columns} FROM webhook_subscriptions WHERE principal = ? ORDER BY seq`),
    active: db.prepare(`SELECT ${columns} FROM webhook_subscriptions WHERE status = 'active' ORDER BY seq`),
    setStatus: db.prepare('UPDATE webhook_subscriptions SET status = ? WHERE id = ?'),
    delete: db.prepare('DELETE FROM webhook_subscriptions WHERE id = ?'),
    byService: db.prepare('SELECT id FROM webhook_subscriptions WHERE service_id = ?'),
    deleteByService: db.prepare('DELETE FROM webhook_subscriptions WHERE service_id = ?'),
  };
}

function fromRow(row: Row): Subscription {
  const subscription: Subscription = { id: row.id, principal: row.principal, url: row.url, status: row.status, createdAt: row.created_at, afterPosition: row.after_pos };
  if (row.service_id !== null) subscription.serviceId = row.service_id;
  if (row.secret !== null) subscription.secret = row.secret;
  if (row.types !== null) subscription.types = JSON.parse(row.types) as string[];
  return subscription;
}
