/**
 * Chooses the MCP follow store of `storage.driver`: `redis` (shared by the replicas: sessions and
 * follow lists are seen by all, no affinity needed), otherwise in the process (`memory`, and
 * `sqlite`, which is one node: a restart ends the 2025 sessions, whose clients then initialize again).
 */
import type { StorageConfig } from '../../config/types.ts';
import { redisStoreOptions } from '../../storage/redis.ts';
import { MemoryFollowStore, type FollowStore, type FollowStoreLimits } from './follow-store.ts';
import { RedisFollowStore } from './redis-follow-store.ts';

/** Creates and opens the configured follow store. */
export async function openFollowStore(storage: StorageConfig, limits: FollowStoreLimits): Promise<FollowStore> {
  const store = storage.driver === 'redis' ? new RedisFollowStore(redisStoreOptions(storage), limits) : new MemoryFollowStore(limits);
  await store.open();
  return store;
}
