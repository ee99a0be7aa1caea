/**
 * The SQL of the SQLite `CommandStore`: its tables, its prepared statements and its writes, shared
 * by the store's own connection (reads, `sqlite-store.ts`) and its writer thread's connection
 * (every write, `sqlite-writer.ts`). Tables `command_records` (idempotency records),
 * `command_record_ids` (their on-disk id index), `command_store_writer`, `outbox` and
 * `correlation_aliases`; the event log's tables and its `user_version` are left alone.
 */
import { hash } from 'node:crypto';
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { addMissingColumns, inTransaction } from '../storage/sqlite.ts';
import { MAX_ALIASES_PER_COMMAND, type ClaimedOutboxEntry, type IdempotencyRecord, type NewOutboxEntry, type OutboxEntry } from './CommandStore.ts';
import type { RecentIds } from './recent-ids.ts';

/** The index of `command_records` by expiry (the purge). */
const EXPIRY_INDEX = 'CREATE INDEX IF NOT EXISTS command_records_expires ON command_records (expires_ms);';

/** The tables and indexes (`CREATE … IF NOT EXISTS`: run on every open, by both connections). */
export const SCHEMA = `
-- Idempotency records, appended in rowid order. The writer thread stores its own with in_memory = 1
-- at rowids above every record and above merged_through (\`nextRec\`); any other insert (the
-- migrations, a build before this one on the same file) keeps in_memory = 0.
CREATE TABLE IF NOT EXISTS command_records (
  id          TEXT NOT NULL,
  id_hash     INTEGER NOT NULL,
  principal   TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  answer      TEXT NOT NULL,
  expires_ms  INTEGER NOT NULL,
  in_memory   INTEGER NOT NULL DEFAULT 0
);
${EXPIRY_INDEX}
-- The id index: a hash of the id (\`idHash\`; the record's id tells apart ids that share one) and
-- the record's rowid. It holds every record except the writer thread's above merged_through, which
-- it indexes in its memory (\`recent-ids.ts\`) and merges here later in key order, many per leaf,
-- instead of one random leaf dirtied per accept. The triggers (\`ID_INDEX_TRIGGERS\`) index every
-- other insert at once and drop the entry of every record deleted, whoever deletes it.
CREATE TABLE IF NOT EXISTS command_record_ids (
  id_hash INTEGER NOT NULL,
  rec     INTEGER NOT NULL,
  PRIMARY KEY (id_hash, rec)
) WITHOUT ROWID;
-- One row: the writer thread's records merged into command_record_ids (those at rowid <=
-- merged_through), the epoch of the writer thread that owns the file, and its beat (\`sqlite-owner.ts\`).
CREATE TABLE IF NOT EXISTS command_store_writer (
  epoch          INTEGER NOT NULL,
  merged_through INTEGER NOT NULL,
  beat           INTEGER NOT NULL DEFAULT 0
);
INSERT INTO command_store_writer (epoch, merged_through) SELECT 0, 0 WHERE NOT EXISTS (SELECT 1 FROM command_store_writer);
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

/**
 * Keep `command_record_ids` whole whoever writes `command_records`: an insert not the writer
 * thread's (in_memory = 0) is indexed at once, a deleted record's entry goes with it. Created by
 * `migrate`, once `in_memory` exists.
 */
const ID_INDEX_TRIGGERS = `
CREATE TRIGGER IF NOT EXISTS command_records_indexed AFTER INSERT ON command_records WHEN NEW.in_memory = 0
BEGIN INSERT OR IGNORE INTO command_record_ids (id_hash, rec) VALUES (NEW.id_hash, NEW.rowid); END;
CREATE TRIGGER IF NOT EXISTS command_records_unindexed AFTER DELETE ON command_records
BEGIN DELETE FROM command_record_ids WHERE id_hash = OLD.id_hash AND rec = OLD.rowid; END;
`;

/** Brings a file an older version wrote up to date (run by the store's own connection, before the writer thread opens). */
export function migrate(db: DatabaseSync): void {
  // An outbox from before claims were marked: every entry unclaimed.
  addMissingColumns(db, 'outbox', [['claimed', 'INTEGER NOT NULL DEFAULT 0']]);
  // Records from before the id index in memory: each is in the id index (or `moveIdIndex` puts it there).
  addMissingColumns(db, 'command_records', [['in_memory', 'INTEGER NOT NULL DEFAULT 0']]);
  // The writer's row as 943a35e made it, before the owner beat.
  addMissingColumns(db, 'command_store_writer', [['beat', 'INTEGER NOT NULL DEFAULT 0']]);
  db.exec(ID_INDEX_TRIGGERS);
  moveIdIndex(db);
  moveCommandIds(db);
}

/**
 * A file whose records were found by an index of `command_records` (`command_records_id`, before
 * `command_record_ids`; or a file an older version opened again, which built that index anew): the
 * index goes, and `command_record_ids` is built again from every record, in one transaction.
 */
function moveIdIndex(db: DatabaseSync): void {
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'index' AND name = 'command_records_id'");
  if (!exists.get()) return;
  inTransaction(db, () => {
    if (!exists.get()) return;
    db.exec('DROP INDEX command_records_id; DELETE FROM command_record_ids; UPDATE command_store_writer SET merged_through = 0');
    indexUnmerged(db);
  });
}

/**
 * The records of the table keyed by id (`command_ids`, before `command_records`) move to
 * `command_records` in one transaction, then into the id index: only the ids it does not hold (a
 * file used by both versions in turn, its newest ids first merged into the id index to be seen),
 * so an id keeps one record. Into an empty table they are copied before its expiry index is
 * built, which sorts once instead of inserting at random (1M records: 17 s → 4 s, the event loop
 * held meanwhile).
 */
function moveCommandIds(db: DatabaseSync): void {
  const exists = db.prepare("SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'command_ids'");
  if (!exists.get()) return;
  db.function('command_id_hash', { deterministic: true }, (id) => idHash(String(id)));
  inTransaction(db, () => {
    if (!exists.get()) return;
    indexUnmerged(db);
    const before = db.prepare('SELECT IFNULL(MAX(rowid), 0) AS rec FROM command_records').get()!.rec as number;
    // Copied first, then indexed in key order (the trigger would index them at random: 1M records 6.4 s → 3.9 s).
    db.exec('DROP TRIGGER command_records_indexed');
    if (before === 0) db.exec('DROP INDEX command_records_expires');
    db.exec(`INSERT INTO command_records (id, id_hash, principal, fingerprint, answer, expires_ms)
               SELECT id, command_id_hash(id), principal, fingerprint, answer, expires_ms FROM command_ids AS old
               WHERE NOT EXISTS (SELECT 1 FROM command_record_ids i JOIN command_records r ON r.rowid = i.rec
                                 WHERE i.id_hash = command_id_hash(old.id) AND r.id = old.id)`);
    // Above every record there was, whatever merged_through says (it may be higher: the newest records purged).
    db.prepare('INSERT OR IGNORE INTO command_record_ids (id_hash, rec) SELECT id_hash, rowid FROM command_records WHERE rowid > ? ORDER BY id_hash, rowid').run(before);
    db.exec(`${EXPIRY_INDEX} ${ID_INDEX_TRIGGERS} DROP TABLE command_ids;`);
  });
}

/**
 * Merges every record above `merged_through` into `command_record_ids` at once, in key order
 * (inside the caller's transaction; only before the writer thread opens, which indexes them in
 * memory otherwise).
 */
function indexUnmerged(db: DatabaseSync): void {
  db.exec(`INSERT OR IGNORE INTO command_record_ids (id_hash, rec)
             SELECT id_hash, rowid FROM command_records WHERE rowid > (SELECT merged_through FROM command_store_writer) ORDER BY id_hash, rowid;
           UPDATE command_store_writer SET merged_through = MAX(merged_through, IFNULL((SELECT MAX(rowid) FROM command_records), 0));`);
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
    recordAt: statement('SELECT rowid AS rec, id, principal, fingerprint, answer, expires_ms FROM command_records WHERE rowid = ?'),
    findMerged: statement(
      `SELECT r.rowid AS rec, r.id, r.principal, r.fingerprint, r.answer, r.expires_ms
       FROM command_record_ids i JOIN command_records r ON r.rowid = i.rec WHERE i.id_hash = ? AND r.id = ?`,
    ),
    insertRecord: statement('INSERT INTO command_records (rowid, id, id_hash, principal, fingerprint, answer, expires_ms, in_memory) VALUES (?, ?, ?, ?, ?, ?, ?, 1)'),
    dropRecord: statement('DELETE FROM command_records WHERE rowid = ?'),
    purgeExpired: statement('DELETE FROM command_records WHERE rowid IN (SELECT rowid FROM command_records WHERE expires_ms <= ? ORDER BY expires_ms LIMIT ?)'),
    // A JSON array of [hash, rowid] pairs, in key order (CROSS JOIN: inserted in that order); the pairs of records gone (or holding another id) are skipped.
    mergeIds: statement(`INSERT OR IGNORE INTO command_record_ids (id_hash, rec)
                           SELECT r.id_hash, r.rowid FROM json_each(?) AS pair CROSS JOIN command_records AS r
                           WHERE r.rowid = pair.value ->> 1 AND r.id_hash = pair.value ->> 0`),
    unmerged: statement('SELECT rowid AS rec, id_hash FROM command_records WHERE rowid > ? AND in_memory = 1'),
    lastRec: statement('SELECT IFNULL(MAX(rowid), 0) AS rec FROM command_records'),
    takeOver: statement('UPDATE command_store_writer SET epoch = epoch + 1 RETURNING epoch, merged_through'),
    epoch: statement('SELECT epoch FROM command_store_writer'),
    owner: statement('SELECT epoch, beat FROM command_store_writer'),
    beat: statement('UPDATE command_store_writer SET beat = beat + 1'),
    setMerged: statement('UPDATE command_store_writer SET merged_through = ?'),
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

/**
 * What the writes work on in the writer thread: its statements, and the index in its memory of
 * the records above `merged_through` (`recent-ids.ts`), which only this thread's inserts add to.
 */
export interface WriterState {
  sql: Statements;
  /** The records since the last merge started (the records of a new file, or above `merged_through` at open, at first). */
  recent: RecentIds;
  /** The records being merged into `command_record_ids` (set aside when the merge started), until it ends. */
  merging: RecentIds | undefined;
  /**
   * The rowid of the next record: above every record (`claimFile` moves it past those another
   * process appended) and above `merged_through`, so the thread's records not merged are all above it.
   */
  nextRec: number;
}

/** A record as the values it is stored with (id, principal, fingerprint, answer as JSON, expiry); the writer thread adds the id's hash. */
export type RecordValues = [string, string, string, string, number];
/** An outbox entry as the values of `insertEntry` (the envelope as JSON; `claimed` 1 for an entry claimed as it is enqueued). */
export type EntryValues = [string, string, string, string, string | null, number, number, number, string | null, 0 | 1];

/**
 * Every write of the store, run by the writer thread inside its transaction (no transaction of
 * their own), and `find`, which reads what only that thread indexes. Each takes the thread's state
 * first, then the arguments of the `CommandStore` method of the same name, with records and entries
 * as the flat values their statements take (`recordValues`, `entryValues`): strings and numbers
 * cross to the thread far cheaper than objects.
 */
export const WRITES = {
  /** Stores the record and the entry unless a live record holds the id; returns that record. */
  accept(w: WriterState, record: RecordValues, entry: EntryValues, nowMs: number): IdempotencyRecord | undefined {
    const answer = acceptOne(w, record, entry, nowMs);
    return typeof answer === 'number' ? undefined : answer;
  },
  /** Per item, the live record holding its id, or the seq of its new entry (a number: the answer crosses back small). */
  acceptBatch(w: WriterState, items: Array<[RecordValues, EntryValues]>, nowMs: number): Array<IdempotencyRecord | number> {
    return items.map(([record, entry]) => acceptOne(w, record, entry, nowMs));
  },
  claim(w: WriterState, record: RecordValues, nowMs: number): IdempotencyRecord | undefined {
    return storeUnlessLive(w, record, nowMs);
  },
  /** The live record of `id` at `nowMs`, or undefined (reads only). */
  find(w: WriterState, id: string, nowMs: number): IdempotencyRecord | undefined {
    const row = findRow(w, id, idHash(id));
    return row && row.expires_ms > nowMs ? recordOf(row) : undefined;
  },
  /** Deletes up to `limit` records expired at `nowMs`, the earliest first; returns how many. */
  purgeExpired({ sql }: WriterState, nowMs: number, limit: number): number {
    return Number(sql.purgeExpired.run(nowMs, limit).changes);
  },
  /** Returns the entry's seq. */
  enqueue({ sql }: WriterState, entry: EntryValues): number {
    return Number(sql.insertEntry.run(...entry).lastInsertRowid);
  },
  /** Reads what is due, then pushes its due time to the lease's end (the claim); returns the rows as read (`entriesOf`). */
  claimDue({ sql }: WriterState, backend: string, nowMs: number, limit: number, leaseMs: number): unknown[] {
    const rows = sql.due.all(backend, nowMs, Math.max(0, limit)) as unknown as OutboxRow[];
    for (const row of rows) sql.lease.run(nowMs + leaseMs, row.seq);
    return rows;
  },
  reschedule({ sql }: WriterState, seq: number, attempts: number, nextAttemptMs: number, lastError: string): void {
    sql.reschedule.run(attempts, nextAttemptMs, lastError, seq);
  },
  complete({ sql }: WriterState, seq: number): void {
    sql.complete.run(seq);
  },
  rememberAlias({ sql }: WriterState, id: string, alias: string): void {
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
 * their ids), and `find`, which writes nothing: a transaction of these alone commits with
 * `synchronous=NORMAL`, without an fsync. Every other write (an accept above all: a 201 must
 * survive a power cut) commits with `FULL`.
 */
export const RELAXED_WRITES: ReadonlySet<WriteName> = new Set<WriteName>(['claimDue', 'reschedule', 'complete', 'purgeExpired', 'find']);

/**
 * Writes that are one SQL statement (its triggers' work included), and `find`, which writes
 * nothing: SQLite undoes a failing statement alone (the transaction goes on), so the writer thread
 * runs these without a savepoint of their own (`complete` is most writes).
 */
export const SINGLE_STATEMENT_WRITES: ReadonlySet<WriteName> = new Set<WriteName>(['complete', 'reschedule', 'purgeExpired', 'enqueue', 'find']);

/** Stores the record and the entry unless a live record holds the id: that record, or the entry's seq. */
function acceptOne(w: WriterState, record: RecordValues, entry: EntryValues, nowMs: number): IdempotencyRecord | number {
  return storeUnlessLive(w, record, nowMs) ?? Number(w.sql.insertEntry.run(...entry).lastInsertRowid);
}

/**
 * Stores the record unless a live record holds its id (that record is returned); an expired one is
 * replaced. The new record is appended at the next rowid and indexed in memory only.
 */
function storeUnlessLive(w: WriterState, record: RecordValues, nowMs: number): IdempotencyRecord | undefined {
  const [id, principal, fingerprint, answer, expiresMs] = record;
  const key = idHash(id);
  const row = findRow(w, id, key);
  if (row) {
    if (row.expires_ms > nowMs) return recordOf(row);
    w.sql.dropRecord.run(row.rec);
  }
  // Taken before the insert runs: a rowid the insert fails to use (undone) is skipped, never reused.
  const rec = w.nextRec++;
  w.sql.insertRecord.run(rec, id, key, principal, fingerprint, answer, expiresMs);
  // An entry whose insert is undone later (its savepoint, its transaction) leads to no record: `findRow` skips it.
  w.recent.add(key, rec);
  return undefined;
}

/** The record of `id` (whose hash is `key`), live or expired: among the records indexed in memory first, then those merged. */
function findRow(w: WriterState, id: string, key: number): RecordRow | undefined {
  let found: RecordRow | undefined;
  const holds = (rec: number): boolean => {
    const row = w.sql.recordAt.get(rec) as unknown as RecordRow | undefined;
    if (row?.id !== id) return false;
    found = row;
    return true;
  };
  if (w.recent.find(key, holds) !== undefined || w.merging?.find(key, holds) !== undefined) return found;
  return w.sql.findMerged.get(key, id) as unknown as RecordRow | undefined;
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
