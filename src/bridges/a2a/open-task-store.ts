/**
 * The A2A task store port and its choice by `storage.driver`: `sqlite` (its own connection on the
 * gateway's file; tasks survive a restart), `redis` (shared by the replicas: any one answers
 * `GetTask`), or `memory`.
 *
 * Beyond the SDK's `TaskStore`, the port keeps each task's push-notification configs with the task
 * (forgotten when the task expires or is dropped; a config saved before its task, as `SendMessage`
 * does, expires `ttl` after its save unless the task's saves extend it), bounded per task and per
 * principal, and counts the tasks a principal keeps, so `a2a.maxTasksPerPrincipal` holds on every
 * replica, and a new task never evicts another principal's (`a2a.maxTasks`: see `TaskStoreLimits`)
 * (one contract suite, `test/bridges/a2a/task-store-contract.ts`).
 */
import { ProtoError } from '../../errors.ts';
import { redisStoreOptions } from '../../storage/redis.ts';
import type { Task } from '@a2a-js/sdk';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import type { StorageConfig } from '../../config/types.ts';
import { MemoryTaskStore } from './memory-task-store.ts';
import { RedisTaskStore } from './redis-task-store.ts';
import { SqliteTaskStore } from './sqlite-task-store.ts';

/** Limits of a task store. Every adapter reads them at each call, so a reload changes them in place on the same object. */
export interface TaskStoreLimits {
  /**
   * Tasks kept at most. A new task never evicts another principal's unexpired task: when the store
   * is full it takes the place of an ownerless task (written by an older gateway), oldest first,
   * else of the caller's own least recently saved one; with neither, `save` throws 503
   * `TASKS_EXHAUSTED` (`tasksExhausted`) and stores nothing.
   */
  maxTasks: number;
  /** A task is forgotten this long after its last save, in ms. */
  ttlMs: number;
  /** Tasks one principal (across tenants) keeps at most; beyond it a save drops that principal's least recently saved task. Default unbounded. */
  maxTasksPerPrincipal?: number;
  /** Push-notification configs of one task at most. Default unbounded. */
  maxPushConfigsPerTask?: number;
  /** Push-notification configs of one principal at most, over all its tasks. Default unbounded. */
  maxPushConfigsPerPrincipal?: number;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

/** What a push-config save did: saved (or replaced one of the same id), or which bound refused it (nothing saved then). */
export type PushConfigSave = 'saved' | 'task-full' | 'principal-full';

/** The gateway's task store: the SDK's port plus push configs kept with their task and per-principal counts. */
export interface GatewayTaskStore extends TaskStore {
  /**
   * Creates or updates the caller's task: drops expired tasks, the caller's own oldest beyond
   * `maxTasksPerPrincipal`, and makes room within `maxTasks` (ownerless, then own oldest), atomically;
   * throws `tasksExhausted` (nothing stored) when a new task would have to evict another principal's.
   */
  save(task: Task, context: ServerCallContext): Promise<void>;
  open(): Promise<void>;
  /** Forgets nothing durable; closes connections. Idempotent. */
  close(): Promise<void>;
  /** Unexpired tasks the caller's principal keeps, over all tenants. */
  tasksOf(context: ServerCallContext): Promise<number>;
  /** Saves (or replaces, by `configId`) a push config of the caller's task `taskId`, within the bounds, atomically. */
  savePushConfig(taskId: string, context: ServerCallContext, configId: string, json: string): Promise<PushConfigSave>;
  /** The caller's push configs of `taskId` (their JSON), in the order they were first saved. */
  pushConfigs(taskId: string, context: ServerCallContext): Promise<string[]>;
  /** Deletes one push config of the caller's task. Unknown ids are ignored. */
  deletePushConfig(taskId: string, context: ServerCallContext, configId: string): Promise<void>;
}

/** The principal a call is made for (the owner part of its scope). */
export function ownerOf(context: ServerCallContext): string {
  return context.user?.userName ?? 'unknown';
}

/** A bound that is absent is unbounded. */
export function bound(value: number | undefined): number {
  return value ?? Number.MAX_SAFE_INTEGER;
}

/**
 * The refusal of a new task by a store full of other principals' tasks: 503 `TASKS_EXHAUSTED`,
 * `Retry-After` the seconds until the soonest task expires (`freesInMs`), at least 1.
 */
export function tasksExhausted(maxTasks: number, freesInMs: number): ProtoError {
  const seconds = Math.max(1, Math.ceil(freesInMs / 1000));
  return new ProtoError(
    'TASKS_EXHAUSTED',
    `the A2A task store holds a2a.maxTasks (${maxTasks}) tasks of other callers; the soonest is forgotten in ${seconds} s`,
    { limit: 'a2a.maxTasks', max: maxTasks },
    { 'Retry-After': String(seconds) },
  );
}

/** Creates and opens the configured task store. */
export async function openTaskStore(storage: StorageConfig, limits: TaskStoreLimits): Promise<GatewayTaskStore> {
  const store =
    storage.driver === 'sqlite' ? new SqliteTaskStore(storage.path, limits)
    : storage.driver === 'redis' ? new RedisTaskStore(redisStoreOptions(storage), limits)
    : new MemoryTaskStore(limits);
  await store.open();
  return store;
}
