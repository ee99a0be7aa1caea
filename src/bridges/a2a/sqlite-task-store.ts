/**
 * The A2A task store in SQLite (`storage.driver: sqlite`): tables `a2a_tasks` and `a2a_push` in the
 * gateway's database file, through a connection of its own, so a restarted gateway still answers
 * `GetTask` and still posts to a task's push configs. Same limits as the memory store: at most
 * `maxTasksPerPrincipal` per owner (its least recently saved dropped first) and `maxTasks` overall
 * (a new task never evicts another owner's: see `TaskStoreLimits`),
 * forgotten `ttl` after a task's last save, push configs bounded per task and per owner and
 * forgotten with their task. Tasks and configs are stored as A2A JSON (the SDK's codec).
 */
import type { DatabaseSync, StatementSync } from 'node:sqlite';
import { Task, type ListTasksRequest, type ListTasksResponse } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';
import { addMissingColumns, SqliteHandle } from '../../storage/sqlite.ts';
import { bound, ownerOf, tasksExhausted, type GatewayTaskStore, type PushConfigSave, type TaskStoreLimits } from './open-task-store.ts';
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
CREATE TABLE IF NOT EXISTS a2a_push (
  scope       TEXT NOT NULL,
  task_id     TEXT NOT NULL,
  config_id   TEXT NOT NULL,
  owner       TEXT NOT NULL,
  config      TEXT NOT NULL,
  seq         INTEGER NOT NULL,
  expires_at  INTEGER NOT NULL,
  PRIMARY KEY (scope, task_id, config_id)
);
CREATE INDEX IF NOT EXISTS a2a_push_owner ON a2a_push (owner, expires_at);
CREATE INDEX IF NOT EXISTS a2a_push_expiry ON a2a_push (expires_at);
`;

/** A file written before tasks had an owner column gets one (its old rows count for no principal). */
function migrate(db: DatabaseSync): void {
  addMissingColumns(db, 'a2a_tasks', [['owner', "TEXT NOT NULL DEFAULT ''"]]);
  db.exec('CREATE INDEX IF NOT EXISTS a2a_tasks_owner ON a2a_tasks (owner, seq)');
}

/** A task row to drop. */
type Victim = { scope: string; id: string };

interface Statements {
  upsert: StatementSync;
  load: StatementSync;
  byScope: StatementSync;
  expire: StatementSync;
  expirePush: StatementSync;
  exists: StatementSync;
  count: StatementSync;
  ownOthers: StatementSync;
  oldestOwn: StatementSync;
  oldestOwnerless: StatementSync;
  soonest: StatementSync;
  forget: StatementSync;
  forgetPush: StatementSync;
  followTask: StatementSync;
  owned: StatementSync;
  pushOfTask: StatementSync;
  pushOfOwner: StatementSync;
  hasPush: StatementSync;
  taskExpiry: StatementSync;
  upsertPush: StatementSync;
  loadPush: StatementSync;
  deletePush: StatementSync;
}

/** A bounded, expiring task store in one SQLite file (or `:memory:`). */
export class SqliteTaskStore implements GatewayTaskStore {
  readonly #sqlite: SqliteHandle<Statements>;
  readonly #limits: TaskStoreLimits;

  /** @param path the database file (shared with the event log), or `:memory:`. */
  constructor(path: string, limits: TaskStoreLimits) {
    // NORMAL: a task is a view of the command's progress; the command and its events are durable elsewhere.
    this.#sqlite = new SqliteHandle('SqliteTaskStore', path, { schema: SCHEMA, migrate, prepare, synchronous: 'NORMAL' });
    this.#limits = limits;
  }

  /** Opens the connection and the tables. Idempotent. */
  async open(): Promise<void> {
    this.#sqlite.open();
  }

  /**
   * Saves `task` for the caller's scope in one transaction: drops expired tasks, the owner's oldest
   * beyond `maxTasksPerPrincipal`, and makes room within `maxTasks` from ownerless rows (written
   * before the owner column), then the owner's own oldest; never another owner's (else 503).
   */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const now = this.#now();
    const scope = taskScope(context);
    const owner = ownerOf(context);
    const expiresAt = now + this.#limits.ttlMs;
    const json = JSON.stringify(Task.toJSON(task));
    const full = this.#sqlite.transaction((sql) => {
      sql.expire.run(now);
      sql.expirePush.run(now);
      const isNew = sql.exists.get(scope, task.id) === undefined;
      const total = (sql.count.get() as { n: number }).n + (isNew ? 1 : 0);
      const own = (sql.ownOthers.get(owner, scope, task.id) as { n: number }).n;
      const ownDrop = Math.max(0, own + 1 - bound(this.#limits.maxTasksPerPrincipal));
      let need = total - ownDrop - this.#limits.maxTasks;
      const ownerless = need > 0 ? (sql.oldestOwnerless.all(need) as Victim[]) : [];
      need -= ownerless.length;
      const ownMore = Math.max(0, Math.min(need, own - ownDrop));
      if (isNew && need - ownMore > 0) return (sql.soonest.get() as { at: number }).at;
      const victims = [...ownerless, ...(sql.oldestOwn.all(owner, scope, task.id, ownDrop + ownMore) as Victim[])];
      sql.upsert.run(scope, task.id, json, expiresAt, owner);
      sql.followTask.run(expiresAt, scope, task.id);
      for (const victim of victims) {
        sql.forgetPush.run(victim.scope, victim.id);
        sql.forget.run(victim.scope, victim.id);
      }
      return undefined;
    });
    if (full !== undefined) throw tasksExhausted(this.#limits.maxTasks, full - now);
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

  async tasksOf(context: ServerCallContext): Promise<number> {
    return (this.#sqlite.statements.owned.get(ownerOf(context), this.#now()) as { n: number }).n;
  }

  async savePushConfig(taskId: string, context: ServerCallContext, configId: string, json: string): Promise<PushConfigSave> {
    const now = this.#now();
    const scope = taskScope(context);
    const owner = ownerOf(context);
    return this.#sqlite.transaction((sql) => {
      const exists = sql.hasPush.get(scope, taskId, configId, now) !== undefined;
      if (!exists) {
        if ((sql.pushOfTask.get(scope, taskId, now) as { n: number }).n >= bound(this.#limits.maxPushConfigsPerTask)) return 'task-full';
        if ((sql.pushOfOwner.get(owner, now) as { n: number }).n >= bound(this.#limits.maxPushConfigsPerPrincipal)) return 'principal-full';
      }
      // With its task: the task's expiry; before its task is saved (SendMessage): the ttl from now.
      const task = sql.taskExpiry.get(scope, taskId) as { expires_at: number } | undefined;
      const expiresAt = task?.expires_at ?? now + this.#limits.ttlMs;
      sql.upsertPush.run(scope, taskId, configId, owner, json, expiresAt);
      return 'saved';
    });
  }

  async pushConfigs(taskId: string, context: ServerCallContext): Promise<string[]> {
    const rows = this.#sqlite.statements.loadPush.all(taskScope(context), taskId, this.#now()) as Array<{ config: string }>;
    return rows.map((row) => row.config);
  }

  async deletePushConfig(taskId: string, context: ServerCallContext, configId: string): Promise<void> {
    this.#sqlite.statements.deletePush.run(taskScope(context), taskId, configId);
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
      `INSERT INTO a2a_tasks (scope, id, task, seq, expires_at, owner)
       VALUES (?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM a2a_tasks), ?, ?)
       ON CONFLICT (scope, id) DO UPDATE SET task = excluded.task, seq = excluded.seq, expires_at = excluded.expires_at, owner = excluded.owner`,
    ),
    load: db.prepare('SELECT task FROM a2a_tasks WHERE scope = ? AND id = ? AND expires_at > ?'),
    byScope: db.prepare('SELECT task FROM a2a_tasks WHERE scope = ? AND expires_at > ?'),
    expire: db.prepare('DELETE FROM a2a_tasks WHERE expires_at <= ?'),
    // A task's configs expire with it (their expiry follows the task's saves); one saved before its task lives its own ttl.
    expirePush: db.prepare('DELETE FROM a2a_push WHERE expires_at <= ?'),
    exists: db.prepare('SELECT 1 FROM a2a_tasks WHERE scope = ? AND id = ?'),
    count: db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks'),
    ownOthers: db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks WHERE owner = ? AND NOT (scope = ? AND id = ?)'),
    oldestOwn: db.prepare('SELECT scope, id FROM a2a_tasks WHERE owner = ? AND NOT (scope = ? AND id = ?) ORDER BY seq LIMIT ?'),
    // Rows written before the owner column are nobody's: the first to make room.
    oldestOwnerless: db.prepare(`SELECT scope, id FROM a2a_tasks WHERE owner = '' ORDER BY seq LIMIT ?`),
    soonest: db.prepare('SELECT MIN(expires_at) AS at FROM a2a_tasks'),
    forget: db.prepare('DELETE FROM a2a_tasks WHERE scope = ? AND id = ?'),
    forgetPush: db.prepare('DELETE FROM a2a_push WHERE scope = ? AND task_id = ?'),
    followTask: db.prepare('UPDATE a2a_push SET expires_at = MAX(expires_at, ?) WHERE scope = ? AND task_id = ?'),
    owned: db.prepare('SELECT COUNT(*) AS n FROM a2a_tasks WHERE owner = ? AND expires_at > ?'),
    pushOfTask: db.prepare('SELECT COUNT(*) AS n FROM a2a_push WHERE scope = ? AND task_id = ? AND expires_at > ?'),
    pushOfOwner: db.prepare('SELECT COUNT(*) AS n FROM a2a_push WHERE owner = ? AND expires_at > ?'),
    hasPush: db.prepare('SELECT 1 FROM a2a_push WHERE scope = ? AND task_id = ? AND config_id = ? AND expires_at > ?'),
    taskExpiry: db.prepare('SELECT expires_at FROM a2a_tasks WHERE scope = ? AND id = ?'),
    upsertPush: db.prepare(
      `INSERT INTO a2a_push (scope, task_id, config_id, owner, config, seq, expires_at)
       VALUES (?, ?, ?, ?, ?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM a2a_push), ?)
       ON CONFLICT (scope, task_id, config_id) DO UPDATE SET config = excluded.config, expires_at = excluded.expires_at`,
    ),
    loadPush: db.prepare('SELECT config FROM a2a_push WHERE scope = ? AND task_id = ? AND expires_at > ? ORDER BY seq'),
    deletePush: db.prepare('DELETE FROM a2a_push WHERE scope = ? AND task_id = ? AND config_id = ?'),
  };
}
