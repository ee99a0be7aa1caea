/** Redis upkeep of the benchmarks: each run works under a prefix of its own and removes it after. */
import { Redis } from 'ioredis';

/** Deletes every key under `prefix` on the Redis at `url`. */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const client = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}
