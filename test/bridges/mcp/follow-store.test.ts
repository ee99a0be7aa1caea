import { MemoryFollowStore } from '../../../src/bridges/mcp/follow-store.ts';
import { RedisFollowStore } from '../../../src/bridges/mcp/redis-follow-store.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { followStoreContract } from './follow-store-contract.ts';

followStoreContract('memory', (limits) => new MemoryFollowStore(limits));
followStoreContract('redis', (limits) => {
  const prefix = randomPrefix();
  return deletingPrefixOnClose(new RedisFollowStore({ url: SHARED_REDIS_URL, prefix }, limits), prefix);
});
