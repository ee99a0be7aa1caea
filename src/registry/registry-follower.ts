/**
 * Keeps a replica's registry in step with the others on a shared store (README, "Several
 * replicas"): registering, removing, pausing and resuming a service on any replica takes effect on
 * every replica within `REGISTRY_SYNC_BOUND_MS`.
 *
 * - A change notice (Redis pub/sub, sent after every change) makes it re-read at once: the usual
 *   delay is one round trip.
 * - A notice can be lost (the subscriber connection was down, Redis restarted). So every
 *   `VERSION_CHECK_MS` it also reads the registry's version, one `GET`, and re-reads when the
 *   version differs from the one it last applied; after a reconnect of the notice connection it
 *   re-reads at once. A missed notice therefore costs at most one check interval, never a stale replica.
 *
 * A store that is not shared (memory, SQLite: one process) needs none of this: `start()` does nothing.
 */
import type { Logger } from 'pino';
import { isSharedRegistryStore, type RegistryStore } from './RegistryStore.ts';

/** How often the registry's version is checked, in ms (the fallback when a notice is lost). */
export const VERSION_CHECK_MS = 500;

/** The stated bound: a change on one replica is applied on every other one within this many ms. */
export const REGISTRY_SYNC_BOUND_MS = 1_000;

/** What the follower drives. */
export interface FollowedRegistry {
  /** Re-reads the store and applies the differences. */
  sync(): Promise<void>;
}

/** Follows the other replicas' registry changes (see the module comment). `start()`/`close()` idempotent. */
export class RegistryFollower {
  readonly #store: RegistryStore;
  readonly #registry: FollowedRegistry;
  readonly #logger: Logger;
  #applied = -1;
  #timer: NodeJS.Timeout | undefined;
  #stopWatching: (() => void) | undefined;
  /** The re-read running now, if any; a request meanwhile runs one more after it. */
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;

  constructor(store: RegistryStore, registry: FollowedRegistry, logger: Logger) {
    this.#store = store;
    this.#registry = registry;
    this.#logger = logger;
  }

  /** Subscribes to the notices and starts the version checks. */
  async start(): Promise<void> {
    const store = this.#store;
    if (!isSharedRegistryStore(store) || this.#stopWatching || this.#closed) return;
    this.#stopWatching = await store.watch(() => void this.#follow(true));
    // No version applied yet: the first check re-reads, catching a change made between the
    // restore at start-up and the subscription.
    void this.#follow(false);
    this.#timer = setInterval(() => void this.#follow(false), VERSION_CHECK_MS);
    this.#timer.unref();
  }

  /** Stops following. */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#stopWatching?.();
    this.#stopWatching = undefined;
  }

  /** Resolves once every re-read requested so far has run (tests, and callers that must see the others' changes). */
  async settled(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Re-reads when told to (`notified`) or when the version moved; one re-read at a time. */
  #follow(notified: boolean): Promise<void> {
    if (this.#running) {
      this.#again ||= notified;
      return this.#running;
    }
    this.#running = this.#check(notified).finally(() => {
      this.#running = undefined;
      if (this.#again && !this.#closed) {
        this.#again = false;
        void this.#follow(true);
      }
    });
    return this.#running;
  }

  async #check(force: boolean): Promise<void> {
    const store = this.#store;
    if (this.#closed || !isSharedRegistryStore(store)) return;
    try {
      // The version is read before the registry, so a change during the re-read is seen next time.
      const version = await store.version();
      if (!force && version === this.#applied) return;
      await this.#registry.sync();
      this.#applied = version;
    } catch (err) {
      this.#logger.warn({ err }, 'could not re-read the shared registry; trying again at the next check');
    }
  }
}
