/**
 * The A2A task store in memory: the SDK's `TaskStore` port, scoped by tenant and owner (the
 * authenticated principal), bounded (`a2a.maxTasks` overall, `a2a.maxTasksPerPrincipal` per
 * owner: the least recently saved task is dropped first) and expiring (`a2a.taskTtl` after a
 * task's last save), with each task's push configs kept and forgotten with it.
 */
import type { ServerCallContext } from '@a2a-js/sdk/server';
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import { bound, ownerOf, type GatewayTaskStore, type PushConfigSave, type TaskStoreLimits } from './open-task-store.ts';
import { listPage, taskScope as scopeOf } from './task-list.ts';

export type { TaskStoreLimits } from './open-task-store.ts';

interface Stored {
  task: Task;
  scope: string;
  owner: string;
  expiresAt: number;
}

/** The push configs of one task (by config id, in first-save order) and when they are forgotten. */
interface StoredConfigs {
  owner: string;
  configs: Map<string, string>;
  expiresAt: number;
}

/** A bounded, expiring task store in memory (one gateway process; nothing kept across restarts). */
export class MemoryTaskStore implements GatewayTaskStore {
  readonly #limits: TaskStoreLimits;
  /** By scoped key, in order of last save (a Map keeps insertion order). */
  readonly #tasks = new Map<string, Stored>();
  /** Push configs by the scoped key of their task. */
  readonly #push = new Map<string, StoredConfigs>();

  constructor(limits: TaskStoreLimits) {
    this.#limits = limits;
  }

  /** Saves a copy of `task` for the caller's scope; drops the oldest when over `maxTasksPerPrincipal` or `maxTasks`. */
  async save(task: Task, context: ServerCallContext): Promise<void> {
    const scope = scopeOf(context);
    const owner = ownerOf(context);
    const key = `${scope}\n${task.id}`;
    const expiresAt = this.#now() + this.#limits.ttlMs;
    this.#tasks.delete(key);
    this.#tasks.set(key, { task: structuredClone(task), scope, owner, expiresAt });
    const configs = this.#push.get(key);
    if (configs) configs.expiresAt = Math.max(configs.expiresAt, expiresAt);
    const ownKeys = [...this.#tasks].filter(([, s]) => s.owner === owner).map(([k]) => k);
    for (const oldest of ownKeys.slice(0, Math.max(0, ownKeys.length - bound(this.#limits.maxTasksPerPrincipal)))) this.#forget(oldest);
    while (this.#tasks.size > this.#limits.maxTasks) this.#forget(this.#tasks.keys().next().value as string);
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

  async tasksOf(context: ServerCallContext): Promise<number> {
    const owner = ownerOf(context);
    return [...this.#tasks.keys()].filter((key) => this.#live(key)?.owner === owner).length;
  }

  async savePushConfig(taskId: string, context: ServerCallContext, configId: string, json: string): Promise<PushConfigSave> {
    const key = `${scopeOf(context)}\n${taskId}`;
    const owner = ownerOf(context);
    const now = this.#now();
    // With its task: the task's expiry; before its task is saved (SendMessage): the ttl from now.
    const task = this.#live(key);
    const entry = this.#livePush(key) ?? { owner, configs: new Map<string, string>(), expiresAt: task?.expiresAt ?? now + this.#limits.ttlMs };
    if (!entry.configs.has(configId)) {
      if (entry.configs.size >= bound(this.#limits.maxPushConfigsPerTask)) return 'task-full';
      if (this.#pushOf(owner) >= bound(this.#limits.maxPushConfigsPerPrincipal)) return 'principal-full';
    }
    entry.configs.set(configId, json);
    this.#push.set(key, entry);
    return 'saved';
  }

  async pushConfigs(taskId: string, context: ServerCallContext): Promise<string[]> {
    return [...(this.#livePush(`${scopeOf(context)}\n${taskId}`)?.configs.values() ?? [])];
  }

  async deletePushConfig(taskId: string, context: ServerCallContext, configId: string): Promise<void> {
    const key = `${scopeOf(context)}\n${taskId}`;
    const entry = this.#push.get(key);
    entry?.configs.delete(configId);
    if (entry?.configs.size === 0) this.#push.delete(key);
  }

  /** Nothing to open. */
  async open(): Promise<void> {}

  /** Forgets every task. Idempotent. */
  async close(): Promise<void> {
    this.#tasks.clear();
    this.#push.clear();
  }

  /** Push configs `owner` holds over all its live tasks. */
  #pushOf(owner: string): number {
    let held = 0;
    for (const key of [...this.#push.keys()]) {
      const entry = this.#livePush(key);
      if (entry?.owner === owner) held += entry.configs.size;
    }
    return held;
  }

  #forget(key: string): void {
    this.#tasks.delete(key);
    this.#push.delete(key);
  }

  /** The entry under `key` unless it expired (an expired one is removed on the way, with its push configs). */
  #live(key: string): Stored | undefined {
    const stored = this.#tasks.get(key);
    if (stored === undefined) return undefined;
    if (stored.expiresAt > this.#now()) return stored;
    this.#forget(key);
    return undefined;
  }

  #livePush(key: string): StoredConfigs | undefined {
    const entry = this.#push.get(key);
    if (entry === undefined) return undefined;
    if (entry.expiresAt > this.#now()) return entry;
    this.#push.delete(key);
    return undefined;
  }

  #now(): number {
    return (this.#limits.now ?? Date.now)();
  }
}
