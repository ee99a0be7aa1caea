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
 * Keys are not prefixed here: each store builds its keys from `storage.prefix` itself, because
 * Lua scripts receive key names as arguments and must see the same names as the client.
 */
import { Redis, type RedisOptions } from 'ioredis';
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
  storage: Pick<StorageConfig, 'url'> & { redis?: Pick<RedisSettings, 'sentinels' | 'name'> },
  purpose: RedisPurpose,
  extra: RedisOptions = {},
): Promise<Redis> {
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

/** Where a Redis store connects: `storage.url`, `storage.prefix` and the Sentinel settings of `storage.redis`. */
export interface RedisStoreOptions {
  /** A URL ioredis accepts (`redis://`, `rediss://`, password, database). */
  url: string;
  /** Prepended to every key (`storage.prefix`). */
  prefix: string;
  sentinels?: Array<{ host: string; port: number }>;
  /** The Sentinel master name. */
  name?: string;
  /** Told every command's duration and outcome (metrics); default none. */
  observer?: RedisObserver;
}

/** A Redis store's options from the storage configuration. */
export function redisStoreOptions(storage: StorageConfig): RedisStoreOptions {
  const { sentinels, name } = storage.redis;
  return {
    url: storage.url, prefix: storage.prefix, ...(sentinels && { sentinels }), ...(name !== undefined && { name }), ...(storage.redisObserver && { observer: storage.redisObserver }),
  };
}

/** Opens a store's connection (see `connectRedis`), observed when the options carry an observer. */
export async function connectStore(options: RedisStoreOptions, purpose: RedisPurpose = 'commands', extra: RedisOptions = {}): Promise<Redis> {
  const { url, sentinels, name, observer } = options;
  const client = await connectRedis({ url, redis: { ...(sentinels && { sentinels }), ...(name !== undefined && { name }) } }, purpose, extra);
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
