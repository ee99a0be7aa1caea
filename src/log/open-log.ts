/**
 * Chooses the event log store of `storage.driver`: `sqlite` (the default, durable), `memory`
 * (tests and throwaway runs), or `redis` (shared by every replica on `storage.url` and `prefix`,
 * with live fan-out across replicas).
 */
import { redisStoreOptions } from '../storage/redis.ts';
import type { StorageConfig } from '../config/types.ts';
import type { EventLog } from './EventLog.ts';
import { MemoryEventLog } from './memory.ts';
import { RedisEventLog } from './redis.ts';
import { SqliteEventLog } from './sqlite.ts';

/** Creates and opens the configured store. */
export async function openEventLog(storage: StorageConfig): Promise<EventLog> {
  const log = storage.driver === 'redis' ? redisLog(storage) : storage.driver === 'memory' ? new MemoryEventLog() : new SqliteEventLog(storage.path);
  await log.open();
  return log;
}

function redisLog(storage: StorageConfig): RedisEventLog {
  return new RedisEventLog(redisStoreOptions(storage));
}
