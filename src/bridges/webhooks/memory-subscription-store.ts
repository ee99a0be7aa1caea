/**
 * Subscriptions in memory (`storage.driver: memory`): same behaviour as the SQLite store, nothing kept.
 */
import type { Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

/** A `SubscriptionStore` in a Map (insertion order = creation order). */
export class MemorySubscriptionStore implements SubscriptionStore {
  readonly #byId = new Map<string, Subscription>();

  async open(): Promise<void> {}

  async create(subscription: Subscription): Promise<void> {
    if (this.#byId.has(subscription.id)) throw new Error(`subscription ${subscription.id} exists`);
    this.#byId.set(subscription.id, copy(subscription));
  }

  async get(id: string): Promise<Subscription | undefined> {
    const found = this.#byId.get(id);
    return found && copy(found);
  }

  async listByPrincipal(principal: string): Promise<Subscription[]> {
    return [...this.#byId.values()].filter((s) => s.principal === principal).map(copy);
  }

  async listActive(): Promise<Subscription[]> {
    return [...this.#byId.values()].filter((s) => s.status === 'active').map(copy);
  }

  async setStatus(id: string, status: SubscriptionStatus): Promise<boolean> {
    const found = this.#byId.get(id);
    if (found) found.status = status;
    return found !== undefined;
  }

  async delete(id: string): Promise<boolean> {
    return this.#byId.delete(id);
  }

  async deleteByService(serviceId: string): Promise<string[]> {
    const ids = [...this.#byId.values()].filter((s) => s.serviceId === serviceId).map((s) => s.id);
    for (const id of ids) this.#byId.delete(id);
    return ids;
  }

  /** Forgets nothing (a memory store keeps its data until dropped); safe to call twice. */
  async close(): Promise<void> {}
}

// Copies in and out, so callers never share (and mutate) the stored object.
function copy(subscription: Subscription): Subscription {
  return { ...subscription, ...(subscription.types ? { types: [...subscription.types] } : {}) };
}
