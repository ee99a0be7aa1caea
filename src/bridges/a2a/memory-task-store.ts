/**
 * The A2A task store in memory: the SDK's `TaskStore` port, scoped by tenant and owner (the
 * authenticated principal), bounded (`a2a.maxTasks`, the least recently saved task is dropped
 * first) and expiring (`a2a.taskTtl` after a task's last save).
 */
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import { listPage, taskScope as scopeOf } from './task-list.ts';

/** Limits of a task store. Every adapter reads them at each call, so a reload changes them in place on the same object. */
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

  /** The caller's tasks, newest status first, filtered and paged (`task-list.ts`). */
  async list(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    const scope = scopeOf(context);
    const tasks = [...this.#tasks.keys()]
      .map((key) => this.#live(key))
      .filter((s): s is Stored => s !== undefined && s.scope === scope)
      .map((s) => s.task);
    return listPage(tasks, params);
  }

  /** Nothing to open. */
  async open(): Promise<void> {}

  /** Forgets every task. Idempotent. */
  async close(): Promise<void> {
    this.#tasks.clear();
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
