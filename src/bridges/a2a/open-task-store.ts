/**
 * Chooses the A2A task store of `storage.driver`: `sqlite` (its own connection on the gateway's
 * file; tasks survive a restart) or `memory`. `redis` uses the memory store for now: each replica
 * then answers `GetTask` only for its own tasks (a Redis adapter passes the same contract suite).
 */
import type { TaskStore } from '@a2a-js/sdk/server';
import type { StorageConfig } from '../../config/types.ts';
import { MemoryTaskStore, type TaskStoreLimits } from './memory-task-store.ts';
import { SqliteTaskStore } from './sqlite-task-store.ts';

/** A task store with its lifecycle. */
export interface OpenTaskStore extends TaskStore {
  close(): Promise<void>;
}

/** Creates and opens the configured task store. */
export async function openTaskStore(storage: StorageConfig, limits: TaskStoreLimits): Promise<OpenTaskStore> {
  const store = storage.driver === 'sqlite' ? new SqliteTaskStore(storage.path, limits) : new MemoryTaskStore(limits);
  await store.open();
  return store;
}
