/**
 * The A2A task store port and its choice by `storage.driver`: `sqlite` (its own connection on the
 * gateway's file; tasks survive a restart), `redis` (shared by the replicas: any one answers
 * `GetTask`), or `memory`.
 *
 * Beyond the SDK's `TaskStore`, the port keeps each task's push-notification configs with the task
 * (forgotten when the task expires or is dropped; a config saved before its task, as `SendMessage`
 * does, expires `ttl` after its save unless the task's saves extend it), bounded per task and per
 * principal, and counts the tasks a principal keeps, so `a2a.maxTasksPerPrincipal` holds on every
 * replica (one contract suite, `test/bridges/a2a/task-store-contract.ts`).
 */
import { redisStoreOptions } from '../../storage/redis.ts';
import type { ServerCallContext, TaskStore } from '@a2a-js/sdk/server';
import type { StorageConfig } from '../../config/types.ts';
import { MemoryTaskStore } from './memory-task-store.ts';
import { RedisTaskStore } from './redis-task-store.ts';
import { SqliteTaskStore } from './sqlite-task-store.ts';

/** Limits of a task store. */
export interface TaskStoreLimits {
  /** Tasks kept at most; when full, the least recently saved one is dropped. */
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

/** Creates and opens the configured task store. */
export async function openTaskStore(storage: StorageConfig, limits: TaskStoreLimits): Promise<GatewayTaskStore> {
  const store =
    storage.driver === 'sqlite' ? new SqliteTaskStore(storage.path, limits)
    : storage.driver === 'redis' ? new RedisTaskStore(redisStoreOptions(storage), limits)
    : new MemoryTaskStore(limits);
  await store.open();
  return store;
}
