/**
 * Chooses the event log store of `storage.driver`: `sqlite` (the default, durable), `memory`
 * (tests and throwaway runs). The Redis store arrives with scale-out; until then choosing it is a
 * start-up error, not a half-working gateway.
 */
import type { StorageConfig } from '../config/types.ts';
import type { EventLog } from './EventLog.ts';
import { MemoryEventLog } from './memory.ts';
import { SqliteEventLog } from './sqlite.ts';

/** Creates and opens the configured store. */
export async function openEventLog(storage: StorageConfig): Promise<EventLog> {
  if (storage.driver === 'redis') {
    throw new Error('storage.driver "redis" is not available in this version; use "sqlite" or "memory"');
  }
  const log = storage.driver === 'memory' ? new MemoryEventLog() : new SqliteEventLog(storage.path);
  await log.open();
  return log;
}
