/**
 * The registry store in SQLite (`storage.driver: sqlite`): tables `registry_services` (one row per
 * registered service, its fields as JSON) and `registry_paused` (the paused service ids), in the
 * gateway's database file through a connection of its own (`storage/sqlite.ts`: WAL, busy
 * timeout, `synchronous = FULL`: a registration was acknowledged to its caller), beside the event
 * log's. Every write is one short statement.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { SqliteHandle } from '../storage/sqlite.ts';
import type { RegisteredService, RegistryStore } from './RegistryStore.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS registry_services (
  seq      INTEGER PRIMARY KEY AUTOINCREMENT,
  id       TEXT NOT NULL UNIQUE,
  service  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS registry_paused (
  id TEXT PRIMARY KEY
) WITHOUT ROWID;
`;

type Statements = ReturnType<typeof prepare>;

/** A `RegistryStore` in one SQLite file (or `:memory:` for tests). */
export class SqliteRegistryStore implements RegistryStore {
  readonly #sqlite: SqliteHandle<Statements>;

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string) {
    this.#sqlite = new SqliteHandle('the registry store', path, { schema: SCHEMA, prepare });
  }

  async open(): Promise<void> {
    this.#sqlite.open();
  }

  async list(): Promise<RegisteredService[]> {
    return (this.#sqlite.statements.list.all() as Array<{ service: string }>).map((row) => JSON.parse(row.service) as RegisteredService);
  }

  async put(service: RegisteredService): Promise<void> {
    this.#sqlite.statements.put.run(service.id, JSON.stringify(service));
  }

  async delete(id: string): Promise<boolean> {
    const sql = this.#sqlite.statements;
    sql.unpause.run(id);
    return Number(sql.delete.run(id).changes) > 0;
  }

  async pausedIds(): Promise<string[]> {
    return (this.#sqlite.statements.paused.all() as Array<{ id: string }>).map((row) => row.id);
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    const sql = this.#sqlite.statements;
    (paused ? sql.pause : sql.unpause).run(id);
  }

  /** Closes the connection. Safe to call twice. */
  async close(): Promise<void> {
    this.#sqlite.close();
  }
}

function prepare(db: DatabaseSync): Record<'list' | 'put' | 'delete' | 'paused' | 'pause' | 'unpause', StatementSync> {
  return {
    list: db.prepare('SELECT service FROM registry_services ORDER BY seq'),
    // An upsert keeps the row (and its seq: its place in the list).
    put: db.prepare('INSERT INTO registry_services (id, service) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET service = excluded.service'),
    delete: db.prepare('DELETE FROM registry_services WHERE id = ?'),
    paused: db.prepare('SELECT id FROM registry_paused ORDER BY id'),
    pause: db.prepare('INSERT OR IGNORE INTO registry_paused (id) VALUES (?)'),
    unpause: db.prepare('DELETE FROM registry_paused WHERE id = ?'),
  };
}
