/**
 * The SQLite connection of a webhook store: its own `node:sqlite` connection on the gateway's
 * database file (the event log has another), in WAL mode so readers never block the writer, with a
 * busy timeout for the moments another connection holds the write lock.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync } from 'node:sqlite';

/** Opens a connection on `path` (its directory created; `:memory:` for tests); `busyTimeoutMs` default 5000. */
export function openDatabase(path: string, busyTimeoutMs = 5000): DatabaseSync {
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new DatabaseSync(path, { timeout: busyTimeoutMs });
  db.exec('PRAGMA journal_mode = WAL');
  db.exec('PRAGMA synchronous = NORMAL');
  return db;
}

