/**
 * A `SubscriptionStore` that keeps what it read (issue 28): the dispatcher reads a subscription for
 * every batch of deliveries it claims and the fan-out lists the active ones for every page of the
 * log, each a query (and, with `webhooks.secretKey`, a decryption of every secret). Here a read is
 * kept until a write through this store changes the subscription, so only a process whose writes
 * all pass through one store may use it: the single-process stores (memory, SQLite), not Redis,
 * whose replicas change subscriptions behind each other's backs.
 *
 * Reads hand out copies (as every store does: a caller may change what it got). A read that was in
 * flight while a write changed the subscription is answered but not kept.
 */
import type { FailingStreak, StatusChange, Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';
import { SubscriptionStoreDecorator } from './subscription-store-decorator.ts';

/** Subscriptions kept at most (ids of deleted ones included); beyond, the cache starts over. */
export const MAX_CACHED = 10_000;

/** `inner` with its reads kept until a write through it changes them. */
export class CachedSubscriptionStore extends SubscriptionStoreDecorator {
  readonly #byId = new Map<string, Subscription | undefined>();
  #active: Subscription[] | undefined;
  /** Bumped by every write: a read started before it is not kept. */
  #generation = 0;

  override async create(subscription: Subscription): Promise<void> {
    try {
      await this.inner.create(subscription);
    } finally {
      this.#changed(subscription.id);
    }
  }

  override async get(id: string): Promise<Subscription | undefined> {
    if (this.#byId.has(id)) return copyOf(this.#byId.get(id));
    const generation = this.#generation;
    const found = await this.inner.get(id);
    if (generation === this.#generation) {
      if (this.#byId.size >= MAX_CACHED) this.#byId.clear();
      this.#byId.set(id, copyOf(found));
    }
    return found;
  }

  override async listActive(): Promise<Subscription[]> {
    if (this.#active) return this.#active.map((s) => copyOf(s)!);
    const generation = this.#generation;
    const active = await this.inner.listActive();
    if (generation === this.#generation) this.#active = active.map((s) => copyOf(s)!);
    return active;
  }

  override setStatus(id: string, status: SubscriptionStatus, change: StatusChange): Promise<boolean> {
    return this.#write(id, () => this.inner.setStatus(id, status, change));
  }

  override recordAttempt(id: string, succeeded: boolean, nowMs: number): Promise<FailingStreak | undefined> {
    return this.#write(id, () => this.inner.recordAttempt(id, succeeded, nowMs));
  }

  override rotateSecret(id: string, secret: string, previousUntilMs: number): Promise<boolean> {
    return this.#write(id, () => this.inner.rotateSecret(id, secret, previousUntilMs));
  }

  override dropExpiredSecrets(nowMs: number): Promise<number> {
    // Which subscriptions lost a secret is not told: every read is dropped when any did.
    return this.#write(undefined, () => this.inner.dropExpiredSecrets(nowMs), (dropped) => dropped > 0);
  }

  override delete(id: string): Promise<boolean> {
    return this.#write(id, () => this.inner.delete(id));
  }

  override deleteByService(serviceId: string): Promise<string[]> {
    return this.#write(undefined, () => this.inner.deleteByService(serviceId), (deleted) => deleted.length > 0);
  }

  override async close(): Promise<void> {
    this.#changed(undefined);
    await this.inner.close();
  }

  /** Runs a write; afterwards (failed or not) forgets what it may have changed: `id`, or every read when `id` is undefined and `changedAny` says so. */
  async #write<T>(id: string | undefined, write: () => Promise<T>, changedAny: (result: T) => boolean = () => true): Promise<T> {
    let result: T | undefined;
    try {
      result = await write();
      return result;
    } finally {
      if (id !== undefined || result === undefined || changedAny(result)) this.#changed(id);
    }
  }

  /** Forgets the reads of `id` (every read when undefined) and the list of active ones; reads in flight are not kept. */
  #changed(id: string | undefined): void {
    this.#generation += 1;
    this.#active = undefined;
    if (id === undefined) this.#byId.clear();
    else this.#byId.delete(id);
  }
}

/** A copy of a subscription: its fields, and a copy of each nested list or object (none nests deeper). */
function copyOf(subscription: Subscription | undefined): Subscription | undefined {
  if (!subscription) return undefined;
  const copy: Record<string, unknown> = { ...subscription };
  for (const [key, value] of Object.entries(copy)) {
    if (Array.isArray(value)) copy[key] = [...value];
    else if (typeof value === 'object' && value !== null) copy[key] = { ...value };
  }
  return copy as unknown as Subscription;
}
