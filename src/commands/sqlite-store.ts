/**
 * The SQLite `CommandStore` (`storage.driver: sqlite`): its own `node:sqlite` connection on the
 * event log's file (`storage.path`); WAL lets both connections work on it. Tables `command_ids`
 * (idempotency records), `outbox` and `correlation_aliases`; the event log's tables and its
 * `user_version` are left alone.
 *
 * Durability: WAL with `synchronous=FULL` (src/storage/sqlite.ts), so an accept answered 201
 * survives the process being killed and a power loss; dispatch bookkeeping (claim, reschedule,
 * complete) commits with `NORMAL` (`#relaxed`): losing it re-delivers, it never loses a command. Every write is one short synchronous transaction (`BEGIN IMMEDIATE`), so
 * the two connections of this process never wait on each other for long; `busy_timeout` covers the
 * rest.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import {
  type AcceptItem,
  type ClaimedOutboxEntry,
  MAX_ALIASES_PER_COMMAND,
  type CommandStore,
  type IdempotencyRecord,
  type NewOutboxEntry,
  type OutboxEntry,
} from './CommandStore.ts';
import { SqliteHandle } from '../storage/sqlite.ts';

/** How long a statement waits for the other connection's lock, in ms. */
const BUSY_TIMEOUT_MS = 5_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS command_ids (
  id          TEXT PRIMARY KEY,
  principal   TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  answer      TEXT NOT NULL,
  expires_ms  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS command_ids_expires ON command_ids (expires_ms);
CREATE TABLE IF NOT EXISTS outbox (
  seq             INTEGER PRIMARY KEY AUTOINCREMENT,
  id              TEXT NOT NULL,
  backend         TEXT NOT NULL,
  command         TEXT NOT NULL,
  principal       TEXT NOT NULL,
  traceparent     TEXT,
  accepted_ms     INTEGER NOT NULL,
  attempts        INTEGER NOT NULL,
  next_attempt_ms INTEGER NOT NULL,
  last_error      TEXT,
  claimed         INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS outbox_due ON outbox (backend, next_attempt_ms, seq);
CREATE INDEX IF NOT EXISTS outbox_next ON outbox (next_attempt_ms);
CREATE TABLE IF NOT EXISTS correlation_aliases (
  id    TEXT NOT NULL,
  alias TEXT NOT NULL,
  PRIMARY KEY (id, alias)
) WITHOUT ROWID;
`;

interface RecordRow {
  id: string;
  principal: string;
  fingerprint: string;
  answer: string;
  expires_ms: number;
}

interface OutboxRow {
  seq: number;
  id: string;
  backend: string;
  command: string;
  principal: string;
  traceparent: string | null;
  accepted_ms: number;
  attempts: number;
  next_attempt_ms: number;
  last_error: string | null;
  /** 1 while a claim has not ended (no completion or reschedule since it). */
  claimed: number;
}

type Statements = ReturnType<typeof prepareStatements>;

/** A `CommandStore` in one SQLite file (or `:memory:` for tests). */
export class SqliteCommandStore implements CommandStore {
  readonly #sqlite: SqliteHandle<Statements>;

  /** @param path the database file (its directory is created), usually `storage.path`. */
  constructor(path: string) {
    this.#sqlite = new SqliteHandle('SqliteCommandStore', path, {
      schema: SCHEMA,
      prepare: prepareStatements,
      busyTimeoutMs: BUSY_TIMEOUT_MS,
      migrate: addClaimedColumn,
    });
  }

  async open(): Promise<void> {
    this.#sqlite.open();
  }

  async close(): Promise<void> {
    this.#sqlite.close();
  }

  async accept(record: IdempotencyRecord, entry: NewOutboxEntry, nowMs: number): Promise<IdempotencyRecord | undefined> {
    return this.#sqlite.transaction((sql) => {
      const live = liveRecord(sql, record.id, nowMs);
      if (live) return live;
      storeRecord(sql, record);
      insertEntry(sql, entry);
      return undefined;
    });
  }

  async acceptBatch(items: AcceptItem[], nowMs: number): Promise<Array<IdempotencyRecord | undefined>> {
    // One transaction, so one synchronous=FULL commit (one fsync) for the whole batch.
    return this.#sqlite.transaction((sql) =>
      items.map(({ record, entry }) => {
        const live = liveRecord(sql, record.id, nowMs);
        if (live) return live;
        storeRecord(sql, record);
        insertEntry(sql, entry);
        return undefined;
      }),
    );
  }

  async claim(record: IdempotencyRecord, nowMs: number): Promise<IdempotencyRecord | undefined> {
    return this.#sqlite.transaction((sql) => {
      const live = liveRecord(sql, record.id, nowMs);
      if (!live) storeRecord(sql, record);
      return live;
    });
  }

  async find(id: string, nowMs: number): Promise<IdempotencyRecord | undefined> {
    return liveRecord(this.#sqlite.statements, id, nowMs);
  }

  async purgeExpired(nowMs: number): Promise<number> {
    return Number(this.#sqlite.statements.purgeExpired.run(nowMs).changes);
  }

  async enqueue(entry: NewOutboxEntry): Promise<OutboxEntry> {
    const seq = insertEntry(this.#sqlite.statements, entry);
    return { ...structuredClone(entry), seq };
  }

  async due(backend: string, nowMs: number, limit: number): Promise<OutboxEntry[]> {
    const rows = this.#sqlite.statements.due.all(backend, nowMs, Math.max(0, limit)) as unknown as OutboxRow[];
    return rows.map(entryOf);
  }

  async claimDue(backend: string, nowMs: number, limit: number, leaseMs: number): Promise<ClaimedOutboxEntry[]> {
    const sql = this.#sqlite.statements;
    // One transaction: read what is due, then push its due time to the lease's end (the claim).
    return this.#relaxed(() => this.#sqlite.transaction(() => {
      const rows = sql.due.all(backend, nowMs, Math.max(0, limit)) as unknown as OutboxRow[];
      for (const row of rows) sql.lease.run(nowMs + leaseMs, row.seq);
      return rows.map((row) => ({ ...entryOf(row), reclaimed: row.claimed === 1 }));
    }));
  }

  async reschedule(seq: number, attempts: number, nextAttemptMs: number, lastError: string): Promise<void> {
    this.#relaxed(() => this.#sqlite.statements.reschedule.run(attempts, nextAttemptMs, lastError, seq));
  }

  async complete(seq: number): Promise<void> {
    this.#relaxed(() => this.#sqlite.statements.complete.run(seq));
  }

  /**
   * Runs a dispatch bookkeeping write (claim, reschedule, complete) with `synchronous=NORMAL`: its
   * loss in a power cut only re-delivers a command (at least once; result events keep their ids),
   * so it need not wait for an fsync. Accepts keep `FULL`: a 201 must survive a power cut.
   */
  #relaxed<T>(write: () => T): T {
    const { db } = this.#sqlite;
    db.exec('PRAGMA synchronous = NORMAL');
    try {
      return write();
    } finally {
      db.exec('PRAGMA synchronous = FULL');
    }
  }

  async nextDueMs(): Promise<number | undefined> {
    return (this.#sqlite.statements.nextDue.get()?.next as number | null | undefined) ?? undefined;
  }

  async backends(): Promise<string[]> {
    return this.#sqlite.statements.backends.all().map((row) => row.backend as string);
  }

  async depth(backend?: string): Promise<number> {
    const sql = this.#sqlite.statements;
    return (backend === undefined ? sql.depth.get() : sql.depthOf.get(backend))!.n as number;
  }

  async rememberAlias(id: string, alias: string): Promise<void> {
    this.#sqlite.transaction((sql) => {
      const known = sql.aliasCount.get(id)!.n as number;
      if (known < MAX_ALIASES_PER_COMMAND) sql.insertAlias.run(id, alias);
    });
  }

  async aliasesOf(id: string): Promise<string[]> {
    return this.#sqlite.statements.aliases.all(id).map((row) => row.alias as string);
  }
}

function prepareStatements(db: DatabaseSync) {
  const statement = (sql: string): StatementSync => db.prepare(sql);
  return {
    findRecord: statement('SELECT * FROM command_ids WHERE id = ? AND expires_ms > ?'),
    storeRecord: statement('INSERT OR REPLACE INTO command_ids (id, principal, fingerprint, answer, expires_ms) VALUES (?, ?, ?, ?, ?)'),
    purgeExpired: statement('DELETE FROM command_ids WHERE expires_ms <= ?'),
    insertEntry: statement(
      `INSERT INTO outbox (id, backend, command, principal, traceparent, accepted_ms, attempts, next_attempt_ms, last_error)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    ),
    due: statement('SELECT * FROM outbox WHERE backend = ? AND next_attempt_ms <= ? ORDER BY next_attempt_ms, seq LIMIT ?'),
    reschedule: statement('UPDATE outbox SET attempts = ?, next_attempt_ms = ?, last_error = ?, claimed = 0 WHERE seq = ?'),
    complete: statement('DELETE FROM outbox WHERE seq = ?'),
    lease: statement('UPDATE outbox SET next_attempt_ms = ?, claimed = 1 WHERE seq = ?'),
    nextDue: statement('SELECT MIN(next_attempt_ms) AS next FROM outbox'),
    backends: statement('SELECT DISTINCT backend FROM outbox'),
    depth: statement('SELECT COUNT(*) AS n FROM outbox'),
    depthOf: statement('SELECT COUNT(*) AS n FROM outbox WHERE backend = ?'),
    aliasCount: statement('SELECT COUNT(*) AS n FROM correlation_aliases WHERE id = ?'),
    insertAlias: statement('INSERT OR IGNORE INTO correlation_aliases (id, alias) VALUES (?, ?)'),
    aliases: statement('SELECT alias FROM correlation_aliases WHERE id = ? ORDER BY alias'),
  };
}

/** An outbox table created before claims were marked gets its `claimed` column (every entry unclaimed). */
function addClaimedColumn(db: DatabaseSync): void {
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').all('outbox').map((row) => row.name);
  if (!columns.includes('claimed')) db.exec('ALTER TABLE outbox ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0');
}

function liveRecord(sql: Statements, id: string, nowMs: number): IdempotencyRecord | undefined {
  const row = sql.findRecord.get(id, nowMs) as unknown as RecordRow | undefined;
  if (!row) return undefined;
  return { id: row.id, principal: row.principal, fingerprint: row.fingerprint, answer: JSON.parse(row.answer), expiresMs: row.expires_ms };
}

function storeRecord(sql: Statements, record: IdempotencyRecord): void {
  sql.storeRecord.run(record.id, record.principal, record.fingerprint, JSON.stringify(record.answer), record.expiresMs);
}

function insertEntry(sql: Statements, entry: NewOutboxEntry): number {
  const result = sql.insertEntry.run(
    entry.id, entry.backend, JSON.stringify(entry.command), entry.principal, entry.traceparent ?? null,
    entry.acceptedMs, entry.attempts, entry.nextAttemptMs, entry.lastError ?? null,
  );
  return Number(result.lastInsertRowid);
}

function entryOf(row: OutboxRow): OutboxEntry {
  const entry: OutboxEntry = {
    seq: row.seq,
    id: row.id,
    backend: row.backend,
    command: JSON.parse(row.command),
    principal: row.principal,
    acceptedMs: row.accepted_ms,
    attempts: row.attempts,
    nextAttemptMs: row.next_attempt_ms,
  };
  if (row.traceparent !== null) entry.traceparent = row.traceparent;
  if (row.last_error !== null) entry.lastError = row.last_error;
  return entry;
}
