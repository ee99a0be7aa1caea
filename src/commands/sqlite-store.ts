/**
 * The SQLite `CommandStore` (`storage.driver: sqlite`): two connections of its own on the event
 * log's file (`storage.path`), WAL letting them work beside the event log's. Reads run on this
 * thread's connection; every write runs on the writer thread's (`sqlite-writer.ts`), coalesced
 * with the writes asked for beside it into one transaction. Tables and writes:
 * `sqlite-command-sql.ts`.
 *
 * Durability: WAL with `synchronous=FULL` (src/storage/sqlite.ts), so an accept answered 201
 * survives the process being killed and a power loss; a transaction of dispatch bookkeeping alone
 * (claim, reschedule, complete) commits with `NORMAL` (`RELAXED_WRITES`): losing it re-delivers, it
 * never loses a command. The fsync happens on the writer thread, never on the event loop.
 */
import type { AcceptAnswer, AcceptItem, ClaimedOutboxEntry, CommandStore, IdempotencyRecord, NewOutboxEntry, OutboxEntry } from './CommandStore.ts';
import { SqliteHandle } from '../storage/sqlite.ts';
import {
  claimedEntriesOf, entriesOf, entryValues, migrate, prepareStatements, recordValues, SCHEMA, type EntryValues, type RecordValues, type Statements,
} from './sqlite-command-sql.ts';
import { SqliteWriter, type WriterHealth } from './sqlite-writer.ts';

/** How long a statement waits for the other connection's lock, in ms. */
const BUSY_TIMEOUT_MS = 5_000;

/** Expired records deleted per transaction by `purgeExpired` (about 8 ms of the writer thread). */
export const PURGE_CHUNK = 5_000;

/** A `CommandStore` in one SQLite file (a file: its two connections must see one database, so not `:memory:`). */
export class SqliteCommandStore implements CommandStore {
  readonly #sqlite: SqliteHandle<Statements>;
  /** The writer thread: `up` says whether the store takes writes (`/readyz`). */
  readonly writer: SqliteWriter;

  /**
   * @param path the database file (its directory is created), usually `storage.path`.
   * @param health told when the writer thread dies and when a restarted one is up.
   * @param options for tests: `mergeAt`, records indexed in the writer thread's memory before it
   *   merges them into the file; `beatMs`, how often the owner of the file beats (`sqlite-owner.ts`).
   */
  constructor(path: string, health?: WriterHealth, options: { mergeAt?: number; beatMs?: number } = {}) {
    this.#sqlite = new SqliteHandle('SqliteCommandStore', path, {
      schema: SCHEMA,
      prepare: prepareStatements,
      busyTimeoutMs: BUSY_TIMEOUT_MS,
      migrate,
    });
    this.writer = new SqliteWriter('SqliteCommandStore', { path, busyTimeoutMs: BUSY_TIMEOUT_MS, ...options }, health);
  }

  async open(): Promise<void> {
    // This connection first: it creates the tables (and adds columns older files lack) before the writer thread opens its own.
    this.#sqlite.open();
    try {
      await this.writer.open();
    } catch (err) {
      this.#sqlite.close();
      throw err;
    }
  }

  async close(): Promise<void> {
    await this.writer.close();
    this.#sqlite.close();
  }

  accept(record: IdempotencyRecord, entry: NewOutboxEntry, nowMs: number): Promise<IdempotencyRecord | undefined> {
    return this.writer.run('accept', recordValues(record), entryValues(entry), nowMs);
  }

  async acceptBatch(items: AcceptItem[], nowMs: number): Promise<AcceptAnswer[]> {
    // One write, so inside one transaction: one synchronous=FULL commit (one fsync) for the batch.
    // A claimed entry is written claimed (due at its lease's end): no second write for the claim.
    const rows = items.map(({ record, entry, leaseMs, commandJson }): [RecordValues, EntryValues] => [recordValues(record), entryValues(entry, leaseMs === undefined ? undefined : nowMs + leaseMs, commandJson)]);
    const answers = await this.writer.run('acceptBatch', rows, nowMs);
    return answers.map((answer) => (typeof answer === 'number' ? { seq: answer } : { holder: answer }));
  }

  claim(record: IdempotencyRecord, nowMs: number): Promise<IdempotencyRecord | undefined> {
    return this.writer.run('claim', recordValues(record), nowMs);
  }

  find(id: string, nowMs: number): Promise<IdempotencyRecord | undefined> {
    // On the writer thread: it alone indexes the newest records (in its memory).
    return this.writer.run('find', id, nowMs);
  }

  async purgeExpired(nowMs: number): Promise<number> {
    // A chunk per transaction: the writes asked for meanwhile commit between them, instead of
    // waiting out one transaction of every record of the last minute (480,000 at 8,000/s: 0.75 s).
    let purged = 0;
    for (;;) {
      const chunk = await this.writer.run('purgeExpired', nowMs, PURGE_CHUNK);
      purged += chunk;
      if (chunk < PURGE_CHUNK) return purged;
    }
  }

  async enqueue(entry: NewOutboxEntry): Promise<OutboxEntry> {
    const seq = await this.writer.run('enqueue', entryValues(entry));
    return { ...structuredClone(entry), seq };
  }

  async due(backend: string, nowMs: number, limit: number): Promise<OutboxEntry[]> {
    return entriesOf(this.#sqlite.statements.due.all(backend, nowMs, Math.max(0, limit)));
  }

  async claimDue(backend: string, nowMs: number, limit: number, leaseMs: number): Promise<ClaimedOutboxEntry[]> {
    return claimedEntriesOf(await this.writer.run('claimDue', backend, nowMs, limit, leaseMs));
  }

  reschedule(seq: number, attempts: number, nextAttemptMs: number, lastError: string): Promise<void> {
    return this.writer.run('reschedule', seq, attempts, nextAttemptMs, lastError);
  }

  complete(seq: number): Promise<void> {
    return this.writer.run('complete', seq);
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

  rememberAlias(id: string, alias: string): Promise<void> {
    return this.writer.run('rememberAlias', id, alias);
  }

  async aliasesOf(id: string): Promise<string[]> {
    return this.#sqlite.statements.aliases.all(id).map((row) => row.alias as string);
  }
}
