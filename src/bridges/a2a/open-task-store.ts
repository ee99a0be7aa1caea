/**
 * Chooses the A2A task store of `storage.driver`: `sqlite` (its own connection on the gateway's
 * file; tasks survive a restart), `redis` (shared by the replicas: any one answers `GetTask`), or
 * `memory`.
 */
import { redisStoreOptions } from '../../storage/redis.ts';
import type { TaskStore } from '@a2a-js/sdk/server';
import type { StorageConfig } from '../../config/types.ts';
import { MemoryTaskStore, type TaskStoreLimits } from './memory-task-store.ts';
import { RedisTaskStore } from './redis-task-store.ts';
import { SqliteTaskStore } from './sqlite-task-store.ts';

/** A task store with its lifecycle. */
export interface OpenTaskStore extends TaskStore {
  close(): Promise<void>;
}

/** Creates and opens the configured task store. */
export async function openTaskStore(storage: StorageConfig, limits: TaskStoreLimits): Promise<OpenTaskStore> {
  const store =
    storage.driver === 'sqlite' ? new SqliteTaskStore(storage.path, limits)
    : storage.driver === 'redis' ? new RedisTaskStore(redisStoreOptions(storage), limits)
    : new MemoryTaskStore(limits);
  await store.open();
  return store;
}
