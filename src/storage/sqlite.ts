/**
 * One way to open a connection on the gateway's SQLite file. Every store (event log, commands,
 * webhooks, registry) has its own connection on the same file: WAL mode lets readers run beside
 * the one writer, and the busy timeout covers the moments another connection holds the write lock.
 *
 * `synchronous`: `NORMAL` makes a commit survive the process being killed; `FULL` also an OS crash
 * or power loss, at the cost of an fsync per commit. Stores whose writes were acknowledged to a
 * caller (an accepted command, a subscription) use `FULL`; the event log, whose producers can
 * re-deliver from their checkpoints, uses `NORMAL` for throughput.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

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
