/**
 * The move of a gateway's Redis keys to the hash-tagged prefix (`pgw:…` → `{pgw}:…`, see
 * `taggedPrefix`). Gateways before Redis Cluster support wrote their keys under `storage.prefix`
 * as it is; from then on the stores read and write under the tagged prefix. So at start, before
 * any store opens, the keys still under the old prefix are renamed (`RENAMENX`, so a key already
 * under the new name is never overwritten), once: the tagged prefix's `keys:tagged` marks it done.
 *
 * Only the gateway's own namespaces are moved (`log:`, `cmd:`, `sub:`, …), so another gateway on
 * a longer prefix that starts the same (`pgw:staging:`) is left alone. Two replicas starting at
 * once may both move keys; a key the other one moved first is skipped.
 *
 * Not for a Redis Cluster (there was no untagged cluster deployment to move from), nor a prefix
 * that is already tagged or empty. Upgrade with every replica of the older version stopped: an
 * older replica still running writes under the old prefix, which nobody reads any more.
 */
import type { StorageConfig } from '../config/types.ts';
import { closeRedis, connectRedis, taggedPrefix } from './redis.ts';

/** The first segment of every key a store writes (after the prefix). */
export const KEY_NAMESPACES = ['log:', 'cmd:', 'reg:', 'sub:', 'rec:', 'dq:', 'whrate:', 'mcp:', 'a2a:', 'lease:', 'ratelimit:'] as const;

/** Keys renamed per pipeline. */
const RENAME_BATCH = 1_000;

/** Renames the keys under `storage.prefix` to the tagged prefix once; returns how many it moved. */
export async function migrateToTaggedKeys(storage: StorageConfig): Promise<number> {
  const from = storage.prefix;
  const to = taggedPrefix(from);
  if (from === to || storage.redis.cluster) return 0;
  const client = await connectRedis(storage, 'commands');
  try {
    const marker = `${to}keys:tagged`;
    if ((await client.exists(marker)) === 1) return 0;
    let moved = 0;
    // One walk of the keyspace (SCAN visits every key once per walk, whatever the pattern).
    let cursor = '0';
    do {
      const [next, found] = await client.scan(cursor, 'MATCH', `${escapeGlob(from)}*`, 'COUNT', RENAME_BATCH);
      const keys = found.filter((key) => KEY_NAMESPACES.some((namespace) => key.startsWith(namespace, from.length)));
      if (keys.length > 0) {
        const pipeline = client.pipeline();
        for (const key of keys) pipeline.renamenx(key, to + key.slice(from.length));
        // A key another replica renamed meanwhile answers "no such key": skipped.
        moved += ((await pipeline.exec()) ?? []).filter(([err, renamed]) => !err && renamed === 1).length;
      }
      cursor = next;
    } while (cursor !== '0');
    await client.set(marker, '1');
    return moved;
  } finally {
    await closeRedis(client);
  }
}

/** `text` matched literally by a `SCAN MATCH` glob. */
function escapeGlob(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
