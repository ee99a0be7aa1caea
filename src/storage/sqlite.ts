/**
 * One way to open a connection on the gateway's SQLite file, and `SqliteHandle`, the open/close and
 * transaction lifecycle every SQLite store builds on. Every store (event log, commands, webhooks,
 * registry) has its own connection on the same file: WAL mode lets readers run beside the one
 * writer, and the busy timeout covers the moments another connection holds the write lock.
 *
 * `synchronous`: `NORMAL` makes a commit survive the process being killed; `FULL` also an OS crash
 * or power loss, at the cost of an fsync per commit. Stores whose writes were acknowledged to a
 * caller (an accepted command, a subscription) use `FULL`; the event log, whose producers can
 * re-deliver from their checkpoints, uses `NORMAL` for throughput.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';

export interface SqliteOptions {
  /** Default `FULL`. */
  synchronous?: 'NORMAL' | 'FULL';
  /** How long a statement waits for another connection's lock, in ms; default 5000. */
  busyTimeoutMs?: number;
}

/** Opens a connection on `path` (its directory created; `:memory:` for tests) with WAL and the given durability. */
export function openSqlite(path: string, options: SqliteOptions = {}): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path, { timeout: options.busyTimeoutMs ?? 5000 });
  try {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec(`PRAGMA synchronous = ${options.synchronous ?? 'FULL'}`);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * Runs `work` on `db` inside BEGIN IMMEDIATE … COMMIT; rolls back (if still in the transaction) and
 * rethrows when it throws. For a connection without a handle's prepared statements (a migration).
 */
export function inTransaction<T>(db: DatabaseSync, work: () => T): T {
  db.exec('BEGIN IMMEDIATE');
  try {
    const result = work();
    db.exec('COMMIT');
    return result;
  } catch (err) {
    if (db.isTransaction) db.exec('ROLLBACK');
    throw err;
  }
}

/**
 * Adds to `table` each of `columns` (name, then its type and constraints) it does not have yet: a
 * table an older version created gets the columns added since (for a migration).
 */
export function addMissingColumns(db: DatabaseSync, table: string, columns: ReadonlyArray<readonly [string, string]>): void {
  const present = new Set(db.prepare('SELECT name FROM pragma_table_info(?)').all(table).map((row) => row.name));
  for (const [name, type] of columns) if (!present.has(name)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${name} ${type}`);
}

/** What a store gives its `SqliteHandle`: the tables it owns and the statements it runs on them. */
export interface SqliteHandleOptions<S> extends SqliteOptions {
  /** SQL run on every open (`CREATE … IF NOT EXISTS`), so it must be safe to run again. */
  schema: string;
  /** Runs after the schema, before the statements are prepared: brings a file an older version wrote up to date (e.g. adds a column). */
  migrate?: (db: DatabaseSync) => void;
  /** Prepares the store's statements once per open, after the schema. */
  prepare: (db: DatabaseSync) => S;
  /** Runs `PRAGMA optimize` before the connection closes; default false. */
  optimizeOnClose?: boolean;
}

/** The statements every handle prepares for `transaction`. */
interface TransactionStatements {
  begin: StatementSync;
  commit: StatementSync;
  rollback: StatementSync;
}

/** The open state of a handle: one connection and what was prepared on it. */
interface OpenSqlite<S> {
  db: DatabaseSync;
  statements: S;
  tx: TransactionStatements;
}

/**
 * The lifecycle a SQLite store shares with the others: one connection opened by `openSqlite`, the
 * store's schema and prepared statements, short write transactions, and an idempotent close. A
 * store holds one and keeps its own queries; the handle knows nothing of its tables.
 */
export class SqliteHandle<S> {
  readonly #name: string;
  readonly #path: string;
  readonly #options: SqliteHandleOptions<S>;
  #open: OpenSqlite<S> | undefined;

  /**
   * @param name how errors name the store (`${name} is not open`).
   * @param path the database file (its directory is created), or `:memory:` for tests.
   * @param options the schema, the statements, and `openSqlite`'s options (default `FULL`, 5000 ms).
   */
  constructor(name: string, path: string, options: SqliteHandleOptions<S>) {
    this.#name = name;
    this.#path = path;
    this.#options = options;
  }

  /** Whether `open` succeeded and `close` has not run since. */
  get isOpen(): boolean {
    return this.#open !== undefined;
  }

  /** Opens the connection, runs the schema (and the migration) and prepares the statements; does nothing when open. Closes the connection again if a step fails. */
  open(): void {
    if (this.#open) return;
    const { synchronous, busyTimeoutMs } = this.#options;
    const db = openSqlite(this.#path, { synchronous, busyTimeoutMs });
    try {
      db.exec(this.#options.schema);
      this.#options.migrate?.(db);
      this.#open = { db, statements: this.#options.prepare(db), tx: prepareTransaction(db) };
    } catch (err) {
      db.close();
      throw err;
    }
  }

  /** The store's prepared statements; throws `${name} is not open` before `open` or after `close`. */
  get statements(): S {
    return this.#state().statements;
  }

  /** The connection, for statements prepared later (e.g. per filter); throws like `statements`. */
  get db(): DatabaseSync {
    return this.#state().db;
  }

  /** Runs `work` inside BEGIN IMMEDIATE … COMMIT; rolls back (if still in the transaction) and rethrows when it throws. */
  transaction<T>(work: (statements: S) => T): T {
    const { db, statements, tx } = this.#state();
    tx.begin.run();
    try {
      const result = work(statements);
      tx.commit.run();
      return result;
    } catch (err) {
      if (db.isTransaction) tx.rollback.run();
      throw err;
    }
  }

  /** Closes the connection (after `PRAGMA optimize` when asked). Safe to call twice, and before `open`. */
  close(): void {
    const db = this.#open?.db;
    this.#open = undefined;
    if (!db) return;
    if (this.#options.optimizeOnClose) db.exec('PRAGMA optimize');
    db.close();
  }

  #state(): OpenSqlite<S> {
    if (!this.#open) throw new Error(`${this.#name} is not open`);
    return this.#open;
  }
}

function prepareTransaction(db: DatabaseSync): TransactionStatements {
  return { begin: db.prepare('BEGIN IMMEDIATE'), commit: db.prepare('COMMIT'), rollback: db.prepare('ROLLBACK') };
}
