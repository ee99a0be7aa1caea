/**
 * Ingestion leases on Redis (`storage.driver: redis`): key `P lease:{name}` holds the owner id of
 * the replica holding it, with an expiry (`PX`). Taking is `SET NX PX`; renewing and releasing
 * check the owner in one script, so a replica never renews or deletes a lease another one took.
 */
import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from '../storage/redis.ts';
import { RedisScript } from '../storage/redis-script.ts';
import type { IngestionLeases } from './ingestion-lease.ts';

/** Where the leases live and how long one lasts. */
export interface RedisIngestionLeasesOptions extends RedisStoreOptions {
  /** Time to live of a lease, in ms (default 10 000). */
  ttlMs?: number;
}

/** Renews when held by ARGV[1], else takes when free; returns 1 when held. */
const HOLD = new RedisScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
`);

/** Deletes the lease when held by ARGV[1]. */
const RELEASE = new RedisScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0
`);

/** `IngestionLeases` on Redis; one owner id per instance (per replica). */
export class RedisIngestionLeases implements IngestionLeases {
  readonly ttlMs: number;
  readonly #options: RedisIngestionLeasesOptions;
  readonly #owner = randomUUID();
  #client: Redis | undefined;

  constructor(options: RedisIngestionLeasesOptions) {
    this.#options = options;
    this.ttlMs = options.ttlMs ?? 10_000;
  }

  /** Connects. Idempotent. */
  async open(): Promise<void> {
    if (this.#client) return;
    this.#client = await connectStore(this.#options, 'commands');
  }

  async hold(key: string): Promise<boolean> {
    return (await HOLD.run(this.#ready(), [this.#key(key)], [this.#owner, this.ttlMs])) === 1;
  }

  async release(key: string): Promise<void> {
    await RELEASE.run(this.#ready(), [this.#key(key)], [this.#owner]);
  }

  /** Closes the connection (leases not released expire). Safe to call twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }

  #key(key: string): string {
    return `${this.#options.prefix}lease:${key}`;
  }

  #ready(): Redis {
    if (!this.#client) throw new Error('RedisIngestionLeases is not open');
    return this.#client;
  }
}
