/**
 * Chooses the registry store of `storage.driver`: `sqlite` (the default: its own connection on the
 * event log's file), `memory`, or `redis` (shared by the replicas on `storage.url` and `prefix`).
 */
import { redisStoreOptions } from '../storage/redis.ts';
import type { StorageConfig } from '../config/types.ts';
import { MemoryRegistryStore } from './memory-registry-store.ts';
import { RedisRegistryStore } from './redis-registry-store.ts';
import type { RegistryStore } from './RegistryStore.ts';
import { SqliteRegistryStore } from './sqlite-registry-store.ts';

/** Creates and opens the configured registry store. */
export async function openRegistryStore(storage: StorageConfig): Promise<RegistryStore> {
  const store =
    storage.driver === 'sqlite' ? new SqliteRegistryStore(storage.path)
    : storage.driver === 'redis' ? new RedisRegistryStore(redisStoreOptions(storage))
    : new MemoryRegistryStore();
  await store.open();
  return store;
}
