/**
 * The SQL of the SQLite `CommandStore`: its tables, its prepared statements and its writes, shared
 * by the store's own connection (reads, `sqlite-store.ts`) and its writer thread's connection
 * (every write, `sqlite-writer.ts`). Tables `command_ids` (idempotency records), `outbox` and
 * `correlation_aliases`; the event log's tables and its `user_version` are left alone.
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { MAX_ALIASES_PER_COMMAND, type ClaimedOutboxEntry, type IdempotencyRecord, type NewOutboxEntry, type OutboxEntry } from './CommandStore.ts';

/** The tables and indexes (`CREATE … IF NOT EXISTS`: run on every open, by both connections). */
export const SCHEMA = `
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

/** An outbox table created before claims were marked gets its `claimed` column (every entry unclaimed). */
export function addClaimedColumn(db: DatabaseSync): void {
  const columns = db.prepare('SELECT name FROM pragma_table_info(?)').all('outbox').map((row) => row.name);
  if (!columns.includes('claimed')) db.exec('ALTER TABLE outbox ADD COLUMN claimed INTEGER NOT NULL DEFAULT 0');
}

/** The prepared statements of one connection. */
export type Statements = ReturnType<typeof prepareStatements>;

/** Prepares the store's statements on a connection (after `SCHEMA`). */
export function prepareStatements(db: DatabaseSync) {
  const statement = (sql: string): StatementSync => db.prepare(sql);
  return {
    findRecord: statement('SELECT * FROM command_ids WHERE id = ? AND expires_ms > ?'),
    storeRecord: statement('INSERT OR REPLACE INTO command_ids (id, principal, fingerprint, answer, expires_ms) VALUES (?, ?, ?, ?, ?)'),
    purgeExpired: statement('DELETE FROM command_ids WHERE expires_ms <= ?'),
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

/** A record as the values of `storeRecord` (id, principal, fingerprint, answer as JSON, expiry). */
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
    const live = liveRecord(sql, record[0], nowMs);
    if (!live) sql.storeRecord.run(...record);
    return live;
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
  const live = liveRecord(sql, record[0], nowMs);
  if (live) return live;
  sql.storeRecord.run(...record);
  return Number(sql.insertEntry.run(...entry).lastInsertRowid);
}

/** The live record of `id` at `nowMs`, or undefined. */
export function liveRecord(sql: Statements, id: string, nowMs: number): IdempotencyRecord | undefined {
  const row = sql.findRecord.get(id, nowMs) as unknown as RecordRow | undefined;
  if (!row) return undefined;
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
