/** The `storage:` section: which store (sqlite by default, memory, redis) and its settings. */
import { resolve } from 'node:path';
import { flag, ms, num, text } from '../config/defaults.ts';
import { asMap, type RawMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import type { StorageConfig } from '../config/types.ts';

/** A Redis node's address, for `sentinels` and `cluster`. */
const redisNode = {
  "type": "object",
  "additionalProperties": false,
  "required": ["host", "port"],
  "properties": {
    "host": { "type": "string", "minLength": 1 },
    "port": { "type": "integer", "minimum": 1, "maximum": 65535 },
  },
};

/** `storage:` (driver sqlite at ./data/gateway.db; redis at redis://127.0.0.1:6379/0 under `pgw:`). */
export const storageSection: ConfigSection<'storage'> = {
  key: 'storage',
  schema: {
    "type": "object",
    "description": "Where the event log, idempotency keys, outbox and subscriptions live.",
    "additionalProperties": false,
    "properties": {
      "driver": {
        "type": "string",
        "enum": [
          "sqlite",
          "memory",
          "redis"
        ],
        "default": "sqlite",
        "description": "sqlite: one local file (default); memory: nothing kept; redis: shared by several replicas."
      },
      "path": {
        "type": "string",
        "description": "sqlite: database file, relative to this config file. Default ./data/gateway.db.",
        "minLength": 1,
        "default": "./data/gateway.db"
      },
      "url": {
        "$ref": "#/definitions/redisUrl",
        "description": "redis: connection URL. Default redis://127.0.0.1:6379/0.",
        "default": "redis://127.0.0.1:6379/0"
      },
      "prefix": {
        "type": "string",
        "description": "redis: key prefix. Default pgw:.",
        "default": "pgw:"
      },
      "redis": {
        "type": "object",
        "description": "redis: durability of an accepted command, and Sentinel or Redis Cluster settings passed to ioredis.",
        "additionalProperties": false,
        "properties": {
          "waitReplicas": {
            "type": "integer",
            "minimum": 0,
            "default": 0,
            "description": "Replicas that must acknowledge an accepted command (WAIT) before it is answered 201; a shortfall answers 503. Default 0 (none)."
          },
          "waitTimeout": {
            "$ref": "#/definitions/duration",
            "default": "1s",
            "description": "How long WAIT (and WAITAOF) may take. Default 1s."
          },
          "waitAof": {
            "type": "boolean",
            "default": false,
            "description": "Answer 201 only after WAITAOF confirms the write is fsynced to the primary's AOF. Needs Redis >= 7.2 (refused at start otherwise). Default false."
          },
          "sentinels": {
            "type": "array",
            "description": "Sentinel addresses (host, port); with name, storage.url's password and database still apply.",
            "items": redisNode
          },
          "name": {
            "type": "string",
            "minLength": 1,
            "description": "Sentinel: the monitored master's name (required with sentinels)."
          },
          "cluster": {
            "type": "array",
            "minItems": 1,
            "description": "Redis Cluster seed nodes (host, port): the stores use a Cluster client; storage.url's user, password and TLS apply to every node. All keys share the hash tag of storage.prefix (one slot). Not with sentinels, waitReplicas or waitAof.",
            "items": redisNode
          }
        }
      }
    }
  },
  check(config, report) {
    const redis = asMap(asMap(config.storage).redis);
    if (redis.cluster === undefined) return;
    // A cluster routes by key: WAIT and WAITAOF (no key) would land on any master, not the one written.
    if (redis.sentinels !== undefined) report(['storage', 'redis', 'cluster'], 'cannot be combined with storage.redis.sentinels');
    if (typeof redis.waitReplicas === 'number' && redis.waitReplicas > 0) report(['storage', 'redis', 'cluster'], 'cannot be combined with storage.redis.waitReplicas (yet)');
    if (redis.waitAof === true) report(['storage', 'redis', 'cluster'], 'cannot be combined with storage.redis.waitAof (yet)');
    // A cluster has only database 0: a URL naming another would be ignored, and gateways kept apart by it would share keys.
    const database = databaseOf(asMap(config.storage).url);
    if (database !== undefined && database !== 0) report(['storage', 'url'], `names database ${database}, but a Redis Cluster (storage.redis.cluster) has only database 0: keep gateways apart with storage.prefix`);
  },
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

/** The database number a Redis URL names (its path), 0 when none; undefined when it is not a URL. */
function databaseOf(url: unknown): number | undefined {
  if (typeof url !== 'string' || !URL.canParse(url)) return undefined;
  const path = new URL(url).pathname.replace(/^\//, '');
  return path === '' ? 0 : Number(path);
}

function redisSettings(raw: RawMap): StorageConfig['redis'] {
  return {
    waitReplicas: num(raw.waitReplicas, 0),
    waitTimeoutMs: ms(raw.waitTimeout, '1s'),
    waitAof: flag(raw.waitAof, false),
    ...(Array.isArray(raw.sentinels) && { sentinels: raw.sentinels as Array<{ host: string; port: number }> }),
    ...(typeof raw.name === 'string' && { name: raw.name }),
    ...(Array.isArray(raw.cluster) && { cluster: raw.cluster as Array<{ host: string; port: number }> }),
  };
}
