/**
 * The readiness of the Redis store for `/readyz`: a connection of its own (same settings as the
 * stores', so it loses and regains Redis as they do) whose state says whether Redis answers. While
 * it is down `/readyz` answers 503 with `storage` among the pending components, so a load balancer
 * sends clients to a replica that can store their commands; the stores meanwhile refuse writes with
 * `STORE_UNAVAILABLE` and reconnect by themselves.
 */
import type { Redis } from 'ioredis';
import type { StorageConfig } from '../config/types.ts';
import { closeRedis, connectRedis } from './redis.ts';

/** Whether the Redis of `storage` answers. `start()` and `close()` are idempotent. */
export class RedisReadiness {
  readonly #storage: StorageConfig;
  #client: Redis | undefined;

  constructor(storage: StorageConfig) {
    this.#storage = storage;
  }

  /** Connects (fails when Redis does not answer, as the stores do). */
  async start(): Promise<void> {
    this.#client ??= await connectRedis(this.#storage, 'commands');
  }

  /** True while the connection to Redis is up. */
  ready(): boolean {
    return this.#client?.status === 'ready';
  }

  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }
}
