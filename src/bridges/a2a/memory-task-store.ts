/**
 * The A2A task store in memory: the SDK's `TaskStore` port, scoped by tenant and owner (the
 * authenticated principal), bounded (`a2a.maxTasks`, the least recently saved task is dropped
 * first) and expiring (`a2a.taskTtl` after a task's last save).
 */
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';

/** Limits of a task store. */
export interface TaskStoreLimits {
  /** Tasks kept at most; when full, the least recently saved one is dropped. */
  maxTasks: number;
  /** A task is forgotten this long after its last save, in ms. */
  ttlMs: number;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

interface Stored {
  task: Task;
  scope: string;
  expiresAt: number;
}

/** Default and largest page of `list`. */
const DEFAULT_PAGE_SIZE = 50;
const MAX_PAGE_SIZE = 100;

/** A bounded, expiring `TaskStore` in memory (one gateway process; nothing kept across restarts). */
export class MemoryTaskStore implements TaskStore {
  readonly #limits: TaskStoreLimits;
  /** By scoped key, in order of last save (a Map keeps insertion order). */
  readonly #tasks = new Map<string, Stored>();

  constructor(limits: TaskStoreLimits) {
    this.#limits = limits;
  }

  /** Saves a copy of `task` for the caller's scope; drops the oldest when over `maxTasks`. */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const scope = scopeOf(context);
    const key = `${scope}\n${task.id}`;
    this.#tasks.delete(key);
    this.#tasks.set(key, { task: structuredClone(task), scope, expiresAt: this.#now() + this.#limits.ttlMs });
    while (this.#tasks.size > this.#limits.maxTasks) {
      const oldest = this.#tasks.keys().next().value as string;
      this.#tasks.delete(oldest);
    }
  }

  /** The caller's task with this id, or undefined (unknown, another owner's, or expired). */
  async load(taskId: string, context: ServerCallContext): Promise<Task | undefined> {
    const stored = this.#live(`${scopeOf(context)}\n${taskId}`);
    return stored === undefined ? undefined : structuredClone(stored.task);
  }

  /** The caller's tasks, newest status first, filtered and paged (`pageToken` is an offset). */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const scope = scopeOf(context);
    const tasks = [...this.#tasks.keys()]
      .map((key) => this.#live(key))
      .filter((s): s is Stored => s !== undefined && s.scope === scope)
      .map((s) => s.task)
      .filter((task) => matches(task, params))
      .sort(newestFirst);
    const pageSize = Math.min(Math.max(params.pageSize ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
    const offset = params.pageToken ? Number.parseInt(params.pageToken, 10) || 0 : 0;
    const page = tasks.slice(offset, offset + pageSize).map((task) => shaped(task, params));
    const next = offset + pageSize < tasks.length ? String(offset + pageSize) : '';
    return { tasks: page, nextPageToken: next, pageSize, totalSize: tasks.length };
  }

  /** The entry under `key` unless it expired (an expired one is removed on the way). */
  #live(key: string): Stored | undefined {
    const stored = this.#tasks.get(key);
    if (stored === undefined) return undefined;
    if (stored.expiresAt > this.#now()) return stored;
    this.#tasks.delete(key);
    return undefined;
  }

  #now(): number {
    return (this.#limits.now ?? Date.now)();
  }
}

/** The tenant and owner a call is scoped to (the authenticated principal's id). */
function scopeOf(context: ServerCallContext): string {
  return `${context.tenant ?? ''}\n${context.user?.userName ?? 'unknown'}`;
}

function matches(task: Task, params: ListTasksRequest): boolean {
  if (params.contextId && task.contextId !== params.contextId) return false;
  if (params.status && task.status?.state !== params.status) return false;
  if (params.statusTimestampAfter) {
    const after = Date.parse(params.statusTimestampAfter);
    if (!(Date.parse(task.status?.timestamp ?? '') > after)) return false;
  }
  return true;
}

function newestFirst(a: Task, b: Task): number {
  const byTime = (b.status?.timestamp ?? '').localeCompare(a.status?.timestamp ?? '');
  return byTime !== 0 ? byTime : b.id.localeCompare(a.id);
}

/** A copy with artifacts only when asked for, and at most `historyLength` messages of history. */
function shaped(task: Task, params: ListTasksRequest): Task {
  const copy = structuredClone(task);
  if (!params.includeArtifacts) copy.artifacts = [];
  if (params.historyLength !== undefined) copy.history = params.historyLength === 0 ? [] : copy.history.slice(-params.historyLength);
  return copy;
}
