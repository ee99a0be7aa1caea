/**
 * The A2A task store in SQLite (`storage.driver: sqlite`): a table `a2a_tasks` in the gateway's
 * database file, through a connection of its own, so a restarted gateway still answers `GetTask`.
 * Same limits as the memory store: at most `maxTasks` (the least recently saved dropped first) and
 * forgotten `ttl` after a task's last save. Tasks are stored as A2A JSON (the SDK's codec).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import { SqliteHandle } from '../../storage/sqlite.ts';
import type { TaskStoreLimits } from './memory-task-store.ts';
import { listPage, taskScope } from './task-list.ts';

const SCHEMA = `
CREATE TABLE IF NOT EXISTS a2a_tasks (
  scope       TEXT NOT NULL,
  id          TEXT NOT NULL,
  task        TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  PRIMARY KEY (scope, id)
);
CREATE INDEX IF NOT EXISTS a2a_tasks_seq ON a2a_tasks (seq);
CREATE INDEX IF NOT EXISTS a2a_tasks_expiry ON a2a_tasks (expires_at);
`;

interface Statements {
  upsert: StatementSync;
  load: StatementSync;
  byScope: StatementSync;
  expire: StatementSync;
  trim: StatementSync;
}

/** A bounded, expiring `TaskStore` in one SQLite file (or `:memory:`). */
export class SqliteTaskStore implements TaskStore {
  readonly #sqlite: SqliteHandle<Statements>;
  readonly #limits: TaskStoreLimits;

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string, limits: TaskStoreLimits) {
    // NORMAL: a task is a view of the command's progress; the command and its events are durable elsewhere.
    this.#sqlite = new SqliteHandle('SqliteTaskStore', path, { schema: SCHEMA, prepare, synchronous: 'NORMAL' });
    this.#limits = limits;
  }

  /** Opens the connection and the table. Idempotent. */
  async open(): Promise<void> {
    this.#sqlite.open();
  }

  /** Saves `task` for the caller's scope; drops expired tasks and the oldest beyond `maxTasks`. */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const now = this.#now();
    this.#sqlite.transaction((sql) => {
      sql.upsert.run(taskScope(context), task.id, JSON.stringify(Task.toJSON(task)), now + this.#limits.ttlMs);
      sql.expire.run(now);
      sql.trim.run(this.#limits.maxTasks);
    });
  }

  /** The caller's task with this id, or undefined (unknown, another owner's, or expired). */
  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const row = this.#sqlite.statements.load.get(taskScope(context), taskId, this.#now()) as { task: string } | undefined;
    return row === undefined ? undefined : Task.fromJSON(JSON.parse(row.task));
  }

  /** The caller's tasks, newest status first, filtered and paged (`task-list.ts`). */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const rows = this.#sqlite.statements.byScope.all(taskScope(context), this.#now()) as Array<{ task: string }>;
    return listPage(rows.map((row) => Task.fromJSON(JSON.parse(row.task))), params);
  }

  /** Closes the connection. Idempotent. */
  async close(): Promise<void> {
    this.#sqlite.close();
  }

  #now(): number {
    return (this.#limits.now ?? Date.now)();
  }
}

function prepare(db: DatabaseSync): Statements {
  return {
    upsert: db.prepare(
      `INSERT INTO a2a_tasks (scope, id, task, seq, expires_at)
       VALUES (?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM a2a_tasks), ?)
       ON CONFLICT (scope, id) DO UPDATE SET task = excluded.task, seq = excluded.seq, expires_at = excluded.expires_at`,
    ),
    load: db.prepare('SELECT task FROM a2a_tasks WHERE scope = ? AND id = ? AND expires_at > ?'),
    byScope: db.prepare('SELECT task FROM a2a_tasks WHERE scope = ? AND expires_at > ?'),
    expire: db.prepare('DELETE FROM a2a_tasks WHERE expires_at <= ?'),
    // Keeps the `maxTasks` most recently saved: drops from the (maxTasks+1)-th newest down.
    trim: db.prepare('DELETE FROM a2a_tasks WHERE seq <= (SELECT seq FROM a2a_tasks ORDER BY seq DESC LIMIT 1 OFFSET ?)'),
  };
}
