/**
 * Change notices between replicas over Redis pub/sub (DESIGN.md, Storage: "control state is shared
 * too"). A replica that changes shared control state (the registry, a correlation alias) publishes
 * a short notice on a channel of its prefix; every replica listens on a subscriber connection of
 * its own and reacts at once.
 *
 * Pub/sub is fire-and-forget: a replica whose connection was down misses what was published
 * meanwhile. So a notice only says "look again": the listener re-reads the durable state, and
 * `onResubscribed` tells it when the connection came back (ioredis subscribes again by itself), so
 * it re-reads then too. Stores that need a bound also re-read on a timer (the registry's version check).
 */
import type { Redis } from 'ioredis';
import { closeRedis, connectStore, type RedisStoreOptions } from './redis.ts';

/** Told the message of a notice on its channel. */
export type NoticeListener = (message: string) => void;

/** A subscriber connection for the notices of one prefix. `open()` and `close()` are idempotent. */
export class RedisNotices {
  readonly #options: RedisStoreOptions;
  readonly #listeners = new Map<string, Set<NoticeListener>>();
  readonly #resubscribed = new Set<() => void>();
  #client: Redis | undefined;

  constructor(options: RedisStoreOptions) {
    this.#options = options;
  }

  /** Connects the subscriber connection (fails when Redis does not answer). */
  async open(): Promise<void> {
    if (this.#client) return;
    // No observer: a subscriber's commands are not the stores' traffic.
    const { observer: _observer, ...options } = this.#options;
    const client = await connectStore(options, 'blocking');
    client.on('message', (channel: string, message: string) => {
      for (const listener of this.#listeners.get(channel) ?? []) listener(message);
    });
    // 'ready' again = a reconnect (ioredis re-subscribes on its own): whatever was published while
    // it was down is lost, so the listeners re-read.
    client.on('ready', () => {
      for (const listener of this.#resubscribed) listener();
    });
    this.#client = client;
    if (this.#listeners.size > 0) await client.subscribe(...this.#listeners.keys());
  }

  /** Listens on `channel` (the full name, prefix included); returns the function that stops it. */
  async listen(channel: string, listener: NoticeListener): Promise<() => void> {
    let set = this.#listeners.get(channel);
    if (!set) {
      set = new Set();
      this.#listeners.set(channel, set);
      await this.#client?.subscribe(channel);
    }
    set.add(listener);
    return () => void set.delete(listener);
  }

  /** Calls `listener` each time the subscriber connection comes back after a loss. */
  onResubscribed(listener: () => void): () => void {
    this.#resubscribed.add(listener);
    return () => void this.#resubscribed.delete(listener);
  }

  /** Closes the connection; listeners stay registered (a later `open()` subscribes them again). Safe twice. */
  async close(): Promise<void> {
    const client = this.#client;
    this.#client = undefined;
    if (client) await closeRedis(client);
  }
}

/** Publishes `message` on `channel` through `client`; a lost notice is covered by the listeners' re-reads, so failures are ignored. */
export async function publishNotice(client: Redis, channel: string, message: string): Promise<void> {
  await client.publish(channel, message).catch(() => undefined);
}
