/**
 * Connections to the Redis of `storage.driver: redis`, shared by every Redis store (event log,
 * command store, subscriptions, delivery queue, registry, tasks) and the live fan-out. One place
 * decides how a connection behaves when Redis is away, so every store fails the same way:
 *
 * - commands issued while disconnected fail at once (no offline queue): a caller gets an error it
 *   turns into a 503, never a hang and never a 201 for a write that did not happen;
 * - the client reconnects by itself with a capped backoff, so the stores resume when Redis returns;
 * - a blocking reader (`XREAD BLOCK`) gets a connection of its own (`purpose: 'blocking'`), because a
 *   blocked connection cannot serve other commands.
 *
 * Keys are not prefixed here: each store builds its keys from its prefix itself, because Lua
 * scripts receive key names as arguments and must see the same names as the client. The prefix a
 * gateway's stores get is `storage.prefix` made a hash tag (`pgw:` → `{pgw}:`, `taggedPrefix`), so
 * every key of one gateway lands in one Redis Cluster slot and a multi-key script runs there.
 *
 * With `storage.redis.cluster` (seed nodes) the client is an ioredis `Cluster`: it speaks the same
 * commands and follows the slot map (MOVED/ASK) and failovers by itself.
 */
import { Cluster, Redis, type RedisOptions } from 'ioredis';
import type { RedisObserver, RedisSettings, StorageConfig } from '../config/types.ts';

/** The longest wait between two reconnection attempts, in ms. */
const MAX_RECONNECT_DELAY_MS = 2_000;

/** What a connection is used for: `commands` (request/response) or `blocking` (a dedicated `XREAD BLOCK` reader). */
export type RedisPurpose = 'commands' | 'blocking';

/**
 * Opens a connection to `storage.url` (whatever ioredis accepts: `redis://`, `rediss://` for TLS,
 * a password and a database number in the URL), through Sentinel when `storage.redis.sentinels`
 * and `name` are set, and waits until it is ready. Throws when Redis does
 * not answer within `connectTimeoutMs` (default 5 s), so a gateway that cannot reach its store does
 * not start.
 */
export async function connectRedis(
  storage: Pick<StorageConfig, 'url'> & { redis?: Pick<RedisSettings, 'sentinels' | 'name' | 'cluster'> },
  purpose: RedisPurpose,
  extra: RedisOptions = {},
): Promise<Redis> {
  if (storage.redis?.cluster) return connectCluster(storage.url, storage.redis.cluster, purpose, extra);
  const sentinel = storage.redis?.sentinels ? { sentinels: storage.redis.sentinels, ...(storage.redis.name !== undefined && { name: storage.redis.name }) } : {};
  const client = new Redis(storage.url, {
    ...sentinel,
    connectionName: `proto-gateway:${purpose}`,
    lazyConnect: true,
    enableOfflineQueue: false,
    // A command in flight when the connection drops fails instead of being retried on the next one:
    // the caller decides (a 503 for a request, a retry for a background loop).
    maxRetriesPerRequest: purpose === 'blocking' ? null : 1,
    retryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 6), MAX_RECONNECT_DELAY_MS),
    connectTimeout: 5_000,
    ...extra,
  });
  return ready(client);
}

/**
 * A Cluster client on the seed `nodes`, with `url`'s user, password and TLS for every node (a
 * cluster has only database 0). Typed as `Redis`: the stores use the commands both speak.
 */
async function connectCluster(url: string, nodes: Array<{ host: string; port: number }>, purpose: RedisPurpose, extra: RedisOptions): Promise<Redis> {
  const parsed = new URL(url);
  const client = new Cluster(nodes, {
    lazyConnect: true,
    enableOfflineQueue: false,
    clusterRetryStrategy: (attempt) => Math.min(50 * 2 ** Math.min(attempt, 6), MAX_RECONNECT_DELAY_MS),
    redisOptions: {
      connectionName: `proto-gateway:${purpose}`,
      ...(parsed.username && { username: decodeURIComponent(parsed.username) }),
      ...(parsed.password && { password: decodeURIComponent(parsed.password) }),
      ...(parsed.protocol === 'rediss:' && { tls: {} }),
      maxRetriesPerRequest: purpose === 'blocking' ? null : 1,
      connectTimeout: 5_000,
      ...extra,
    },
  });
  return ready(client as unknown as Redis);
}

/** Connects `client` (lazy) and waits until it is ready; a refused handshake says why. */
async function ready(client: Redis): Promise<Redis> {
  // Without a listener an 'error' event would be thrown; the stores observe errors through their commands.
  client.on('error', () => {});
  let refusal: Error | undefined;
  const remember = (err: Error): void => void (refusal = err);
  client.on('error', remember);
  try {
    await client.connect();
  } catch (err) {
    client.disconnect();
    // A refused handshake (a wrong password) rejects with a bare "Connection is closed.": say why.
    throw refusal ?? err;
  } finally {
    client.off('error', remember);
  }
  return client;
}

/** Closes a connection: QUIT when connected (pending replies arrive first), else a plain disconnect. Safe twice. */
export async function closeRedis(client: Redis): Promise<void> {
  if (client.status === 'end') return;
  if (client.status === 'ready') {
    await client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
  }
}

/** Where a Redis store connects: `storage.url`, its prefix, and the Sentinel or Cluster settings of `storage.redis`. */
export interface RedisStoreOptions {
  /** A URL ioredis accepts (`redis://`, `rediss://`, password, database). */
  url: string;
  /** Prepended to every key (`storage.prefix` made a hash tag: `taggedPrefix`). */
  prefix: string;
  sentinels?: Array<{ host: string; port: number }>;
  /** Redis Cluster seed nodes: the client is a Cluster client. */
  cluster?: Array<{ host: string; port: number }>;
  /** The Sentinel master name. */
  name?: string;
  /** Told every command's duration and outcome (metrics); default none. */
  observer?: RedisObserver;
}

/** A Redis store's options from the storage configuration. */
export function redisStoreOptions(storage: StorageConfig): RedisStoreOptions {
  const { sentinels, name, cluster } = storage.redis;
  return {
    url: storage.url, prefix: taggedPrefix(storage.prefix), ...(sentinels && { sentinels }), ...(name !== undefined && { name }), ...(cluster && { cluster }),
    ...(storage.redisObserver && { observer: storage.redisObserver }),
  };
}

/**
 * `storage.prefix` as a Redis Cluster hash tag, so all of one gateway's keys share a slot:
 * `pgw:` → `{pgw}:`, `app` → `{app}`. A prefix that already has a tag (`{...}`) and the empty
 * prefix stay as they are.
 */
export function taggedPrefix(prefix: string): string {
  if (prefix === '' || /\{[^}]+\}/.test(prefix)) return prefix;
  return prefix.endsWith(':') ? `{${prefix.slice(0, -1)}}:` : `{${prefix}}`;
}

/** Opens a store's connection (see `connectRedis`), observed when the options carry an observer. */
export async function connectStore(options: RedisStoreOptions, purpose: RedisPurpose = 'commands', extra: RedisOptions = {}): Promise<Redis> {
  const { url, sentinels, name, cluster, observer } = options;
  const client = await connectRedis({ url, redis: { ...(sentinels && { sentinels }), ...(name !== undefined && { name }), ...(cluster && { cluster }) } }, purpose, extra);
  if (observer) observe(client, observer);
  return client;
}

/** Reports every command sent on `client` to `observer` when it settles (name, seconds, ok). */
function observe(client: Redis, observer: RedisObserver): void {
  const send = client.sendCommand.bind(client);
  client.sendCommand = ((command: Parameters<Redis['sendCommand']>[0], stream?: Parameters<Redis['sendCommand']>[1]) => {
    const started = performance.now();
    const settled = (ok: boolean) => () => observer(command.name, (performance.now() - started) / 1000, ok);
    command.promise.then(settled(true), settled(false));
    return send(command, stream);
  }) as Redis['sendCommand'];
}
