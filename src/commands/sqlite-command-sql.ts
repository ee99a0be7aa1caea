/**
 * The SQL of the SQLite `CommandStore`: its tables, its prepared statements and its writes, shared
 * by the store's own connection (reads, `sqlite-store.ts`) and its writer thread's connection
 * (every write, `sqlite-writer.ts`). Tables `command_records` (idempotency records), `outbox` and
 * `correlation_aliases`; the event log's tables and its `user_version` are left alone.
 */
import { hash } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { inTransaction } from '../storage/sqlite.ts';
import { MAX_ALIASES_PER_COMMAND, type ClaimedOutboxEntry, type IdempotencyRecord, type NewOutboxEntry, type OutboxEntry } from './CommandStore.ts';

/** The indexes of `command_records`: its records by the hash of their id, and by expiry (the purge). */
const RECORD_INDEXES = `
CREATE INDEX IF NOT EXISTS command_records_id ON command_records (id_hash);
CREATE INDEX IF NOT EXISTS command_records_expires ON command_records (expires_ms);
`;

/** The tables and indexes (`CREATE … IF NOT EXISTS`: run on every open, by both connections). */
export const SCHEMA = `
-- Idempotency records, appended in rowid order and found by a narrow index on a hash of the id
-- (\`idHash\`; the id itself tells apart ids that share one): a client's random id dirties one
-- small index entry, not a record-wide leaf of a table keyed by the id (which split four times
-- as often and cost the writer thread 31 % more per commit).
CREATE TABLE IF NOT EXISTS command_records (
  id          TEXT NOT NULL,
  id_hash     INTEGER NOT NULL,
  principal   TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  answer      TEXT NOT NULL,
  expires_ms  INTEGER NOT NULL
);
${RECORD_INDEXES}
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
  rec: number;
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

/** Brings a file an older version wrote up to date (run by the store's own connection, before the writer thread opens). */
export function migrate(db: DatabaseSync): void {
  addClaimedColumn(db);
  moveCommandIds(db);
}

/** An outbox table created before claims were marked gets its `claimed` column (every entry unclaimed). */
function addClaimedColumn(db: DatabaseSync): void {
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').all('outbox').map((row) => row.name);
  if (!columns.includes('claimed')) db.exec('ALTER TABLE outbox ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0');
}

/**
 * The records of the table keyed by id (`command_ids`, before `command_records`) move to
 * `command_records` in one transaction. Into an empty table (the upgrade) they are copied before
 * its indexes are built, which sorts once instead of inserting at random (1M records: 17 s → 4 s,
 * the event loop held meanwhile); into one that has records (a file used by both versions in
 * turn) only the ids it does not hold move, so an id keeps one record.
 */
function moveCommandIds(db: DatabaseSync): void {
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'command_ids'");
  if (!exists.get()) return;
  db.function('command_id_hash', { deterministic: true }, (id) => idHash(String(id)));
  inTransaction(db, () => {
    if (exists.get()) {
      const copy = `INSERT INTO command_records (id, id_hash, principal, fingerprint, answer, expires_ms)
                      SELECT id, command_id_hash(id), principal, fingerprint, answer, expires_ms FROM command_ids`;
      if (db.prepare('SELECT 1 FROM command_records LIMIT 1').get()) {
        db.exec(`${copy} AS old WHERE NOT EXISTS (SELECT 1 FROM command_records WHERE id_hash = command_id_hash(old.id) AND id = old.id)`);
      } else {
        db.exec(`DROP INDEX command_records_id; DROP INDEX command_records_expires; ${copy}; ${RECORD_INDEXES}`);
      }
      db.exec('DROP TABLE command_ids');
    }
  });
}

/**
 * The index key of a command id in `command_records`: 52 bits of its SHA-256, a safe integer. Two
 * ids may share one (the lookup compares the id too); a cryptographic hash keeps a client from
 * piling chosen ids onto one key.
 */
export function idHash(id: string): number {
  return Number.parseInt(hash('sha256', id, 'hex').slice(0, 13), 16);
}

/** The prepared statements of one connection. */
export type Statements = ReturnType<typeof prepareStatements>;

/** Prepares the store's statements on a connection (after `SCHEMA`). */
export function prepareStatements(db: DatabaseSync) {
  const statement = (sql: string): StatementSync => db.prepare(sql);
  return {
    findRecord: statement('SELECT rowid AS rec, id, principal, fingerprint, answer, expires_ms FROM command_records WHERE id_hash = ? AND id = ?'),
    insertRecord: statement('INSERT INTO command_records (id, id_hash, principal, fingerprint, answer, expires_ms) VALUES (?, ?, ?, ?, ?, ?)'),
    dropRecord: statement('DELETE FROM command_records WHERE rowid = ?'),
    purgeExpired: statement('DELETE FROM command_records WHERE expires_ms <= ?'),
    insertEntry: statement(
      `INSERT INTO outbox (id, backend, command, principal, traceparent, accepted_ms, attempts, next_attempt_ms, last_error, claimed)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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

/** A record as the values it is stored with (id, principal, fingerprint, answer as JSON, expiry); the writer thread adds the id's hash. */
export type RecordValues = [string, string, string, string, number];
/** An outbox entry as the values of `insertEntry` (the envelope as JSON; `claimed` 1 for an entry claimed as it is enqueued). */
export type EntryValues = [string, string, string, string, string | null, number, number, number, string | null, 0 | 1];

/**
 * Every write of the store, run by the writer thread inside its transaction (no transaction of
 * their own). Each takes the statements first, then the arguments of the `CommandStore` method of
 * the same name, with records and entries as the flat values their statements take
 * (`recordValues`, `entryValues`): strings and numbers cross to the thread far cheaper than objects.
 */
export const WRITES = {
  /** Stores the record and the entry unless a live record holds the id; returns that record. */
  accept(sql: Statements, record: RecordValues, entry: EntryValues, nowMs: number): IdempotencyRecord | undefined {
    const answer = acceptOne(sql, record, entry, nowMs);
    return typeof answer === 'number' ? undefined : answer;
  },
  /** Per item, the live record holding its id, or the seq of its new entry (a number: the answer crosses back small). */
  acceptBatch(sql: Statements, items: Array<[RecordValues, EntryValues]>, nowMs: number): Array<IdempotencyRecord | number> {
    return items.map(([record, entry]) => acceptOne(sql, record, entry, nowMs));
  },
  claim(sql: Statements, record: RecordValues, nowMs: number): IdempotencyRecord | undefined {
    return storeUnlessLive(sql, record, nowMs);
  },
  purgeExpired(sql: Statements, nowMs: number): number {
    return Number(sql.purgeExpired.run(nowMs).changes);
  },
  /** Returns the entry's seq. */
  enqueue(sql: Statements, entry: EntryValues): number {
    return Number(sql.insertEntry.run(...entry).lastInsertRowid);
  },
  /** Reads what is due, then pushes its due time to the lease's end (the claim); returns the rows as read (`entriesOf`). */
  claimDue(sql: Statements, backend: string, nowMs: number, limit: number, leaseMs: number): unknown[] {
    const rows = sql.due.all(backend, nowMs, Math.max(0, limit)) as unknown as OutboxRow[];
    for (const row of rows) sql.lease.run(nowMs + leaseMs, row.seq);
    return rows;
  },
  reschedule(sql: Statements, seq: number, attempts: number, nextAttemptMs: number, lastError: string): void {
    sql.reschedule.run(attempts, nextAttemptMs, lastError, seq);
  },
  complete(sql: Statements, seq: number): void {
    sql.complete.run(seq);
  },
  rememberAlias(sql: Statements, id: string, alias: string): void {
    const known = sql.aliasCount.get(id)!.n as number;
    if (known < MAX_ALIASES_PER_COMMAND) sql.insertAlias.run(id, alias);
  },
};

/** The writes, by name. */
export type Writes = typeof WRITES;
/** The name of a write. */
export type WriteName = keyof Writes;

/**
 * Writes whose loss in a power cut only re-delivers a command (at least once; result events keep
 * their ids): a transaction of these alone commits with `synchronous=NORMAL`, without an fsync.
 * Every other write (an accept above all: a 201 must survive a power cut) commits with `FULL`.
 */
export const RELAXED_WRITES: ReadonlySet<WriteName> = new Set<WriteName>(['claimDue', 'reschedule', 'complete', 'purgeExpired']);

/**
 * Writes that are one SQL statement: SQLite undoes a failing statement alone (the transaction goes
 * on), so the writer thread runs these without a savepoint of their own (`complete` is most writes).
 */
export const SINGLE_STATEMENT_WRITES: ReadonlySet<WriteName> = new Set<WriteName>(['complete', 'reschedule', 'purgeExpired', 'enqueue']);

/** Stores the record and the entry unless a live record holds the id: that record, or the entry's seq. */
function acceptOne(sql: Statements, record: RecordValues, entry: EntryValues, nowMs: number): IdempotencyRecord | number {
  return storeUnlessLive(sql, record, nowMs) ?? Number(sql.insertEntry.run(...entry).lastInsertRowid);
}

/** Stores the record unless a live record holds its id (that record is returned); an expired one is replaced. */
function storeUnlessLive(sql: Statements, record: RecordValues, nowMs: number): IdempotencyRecord | undefined {
  const [id, principal, fingerprint, answer, expiresMs] = record;
  const idKey = idHash(id);
  const row = sql.findRecord.get(idKey, id) as unknown as RecordRow | undefined;
  if (row) {
    if (row.expires_ms > nowMs) return recordOf(row);
    sql.dropRecord.run(row.rec);
  }
  sql.insertRecord.run(id, idKey, principal, fingerprint, answer, expiresMs);
  return undefined;
}

/** The live record of `id` at `nowMs`, or undefined. */
export function liveRecord(sql: Statements, id: string, nowMs: number): IdempotencyRecord | undefined {
  const row = sql.findRecord.get(idHash(id), id) as unknown as RecordRow | undefined;
  return row && row.expires_ms > nowMs ? recordOf(row) : undefined;
}

function recordOf(row: RecordRow): IdempotencyRecord {
  return { id: row.id, principal: row.principal, fingerprint: row.fingerprint, answer: JSON.parse(row.answer), expiresMs: row.expires_ms };
}

/** Outbox rows as entries. */
export function entriesOf(rows: unknown[]): OutboxEntry[] {
  return (rows as OutboxRow[]).map(entryOf);
}

/** Outbox rows as `claimDue` read them (before its lease), as claimed entries: reclaimed when an earlier claim never ended. */
export function claimedEntriesOf(rows: unknown[]): ClaimedOutboxEntry[] {
  return (rows as OutboxRow[]).map((row) => ({ ...entryOf(row), reclaimed: row.claimed === 1 }));
}

/** A record as `RecordValues`. */
export function recordValues(record: IdempotencyRecord): RecordValues {
  return [record.id, record.principal, record.fingerprint, JSON.stringify(record.answer), record.expiresMs];
}

/**
 * An entry as `EntryValues`; with `leaseEndMs`, claimed as it is enqueued (due again when the lease
 * ends); `commandJson`, when given, is `JSON.stringify(entry.command)` already made.
 */
export function entryValues(entry: NewOutboxEntry, leaseEndMs?: number, commandJson?: string): EntryValues {
  return [
    entry.id, entry.backend, commandJson ?? JSON.stringify(entry.command), entry.principal, entry.traceparent ?? null,
    entry.acceptedMs, entry.attempts, leaseEndMs ?? entry.nextAttemptMs, entry.lastError ?? null, leaseEndMs === undefined ? 0 : 1,
  ];
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
