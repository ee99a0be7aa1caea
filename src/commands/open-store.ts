/**
 * Chooses the command store of `storage.driver`: `sqlite` (the default: its own connection on the
 * event log's file) or `memory`. `redis` is refused before this is reached (see `log/open-log.ts`).
 */
import type { StorageConfig } from '../config/types.ts';
import type { CommandStore } from './CommandStore.ts';
import { MemoryCommandStore } from './memory-store.ts';
import { SqliteCommandStore } from './sqlite-store.ts';

/** Creates and opens the configured command store. */
export async function openCommandStore(storage: StorageConfig): Promise<CommandStore> {
  if (storage.driver === 'redis') throw new Error('storage.driver "redis" is not available in this version; use "sqlite" or "memory"');
  const store = storage.driver === 'memory' ? new MemoryCommandStore() : new SqliteCommandStore(storage.path);
  await store.open();
  return store;
}
