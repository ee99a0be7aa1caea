/** The `storage:` section: which store (sqlite by default, memory, redis) and its settings. */
import { resolve } from 'node:path';
import { flag, ms, num, text } from '../config/defaults.ts';
import { asMap, type RawMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import type { StorageConfig } from '../config/types.ts';

/** `storage:` (driver sqlite at ./data/gateway.db; redis at redis://127.0.0.1:6379/0 under `pgw:`). */
export const storageSection: ConfigSection<'storage'> = {
  key: 'storage',
  defaults(value, context): StorageConfig {
    const raw = asMap(value);
    return {
      driver: text(raw.driver, 'sqlite') as StorageConfig['driver'],
      path: resolve(context.dir, text(raw.path, './data/gateway.db')),
      url: text(raw.url, 'redis://127.0.0.1:6379/0'),
      prefix: text(raw.prefix, 'pgw:'),
      redis: redisSettings(asMap(raw.redis)),
    };
  },
};

function redisSettings(raw: RawMap): StorageConfig['redis'] {
  return {
    waitReplicas: num(raw.waitReplicas, 0),
    waitTimeoutMs: ms(raw.waitTimeout, '1s'),
    waitAof: flag(raw.waitAof, false),
    ...(Array.isArray(raw.sentinels) && { sentinels: raw.sentinels as Array<{ host: string; port: number }> }),
    ...(typeof raw.name === 'string' && { name: raw.name }),
  };
}
