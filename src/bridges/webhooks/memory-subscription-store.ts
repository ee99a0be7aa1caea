/**
 * Subscriptions in memory (`storage.driver: memory`): same behaviour as the SQLite store, nothing kept.
 */
import type { FailingStreak, Recovery, StatusChange, Subscription, SubscriptionStatus, SubscriptionStore } from './SubscriptionStore.ts';

/** A `SubscriptionStore` in a Map (insertion order = creation order). */
export class MemorySubscriptionStore implements SubscriptionStore {
  readonly #byId = new Map<string, Subscription>();
  readonly #recoveries = new Map<string, Recovery>();
  /** Subscription id → id of its running recovery. */
  readonly #running = new Map<string, string>();
  readonly #leases = new Map<string, { owner: string; untilMs: number }>();

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

  async setStatus(id: string, status: SubscriptionStatus, change: StatusChange): Promise<boolean> {
    const found = this.#byId.get(id);
    if (!found || found.status === status) return false;
    found.status = status;
    if (status === 'disabled') found.disabled = { atMs: change.atMs, reason: change.reason ?? 'failing' };
    else {
      delete found.disabled;
      delete found.failing;
    }
    return true;
  }

  async recordAttempt(id: string, succeeded: boolean, nowMs: number): Promise<FailingStreak | undefined> {
    const found = this.#byId.get(id);
    if (!found) return undefined;
    const streak = found.failing;
    if (succeeded) {
      delete found.failing;
      return streak && { ...streak };
    }
    found.failing = { failures: (streak?.failures ?? 0) + 1, sinceMs: streak?.sinceMs ?? nowMs };
    return { ...found.failing };
  }

  async rotateSecret(id: string, secret: string, previousUntilMs: number): Promise<boolean> {
    const found = this.#byId.get(id);
    if (!found) return false;
    if (found.secret !== undefined) found.previousSecret = { secret: found.secret, untilMs: previousUntilMs };
    else delete found.previousSecret;
    found.secret = secret;
    return true;
  }

  async dropExpiredSecrets(nowMs: number): Promise<number> {
    let dropped = 0;
    for (const s of this.#byId.values()) {
      if (s.previousSecret !== undefined && s.previousSecret.untilMs <= nowMs) {
        delete s.previousSecret;
        dropped += 1;
      }
    }
    return dropped;
  }

  async startRecovery(recovery: Recovery): Promise<string | undefined> {
    const running = this.#running.get(recovery.subscriptionId);
    if (running !== undefined) return running;
    this.#recoveries.set(recovery.id, { ...recovery });
    this.#running.set(recovery.subscriptionId, recovery.id);
    return undefined;
  }

  async getRecovery(id: string): Promise<Recovery | undefined> {
    const found = this.#recoveries.get(id);
    return found && { ...found };
  }

  async claimRecovery(owner: string, nowMs: number, leaseMs: number): Promise<Recovery | undefined> {
    for (const id of this.#running.values()) {
      const lease = this.#leases.get(id);
      if (lease !== undefined && lease.untilMs > nowMs) continue;
      this.#leases.set(id, { owner, untilMs: nowMs + leaseMs });
      return { ...this.#recoveries.get(id)! };
    }
    return undefined;
  }

  async saveRecovery(recovery: Recovery, owner: string, nowMs: number, leaseMs: number, release = false): Promise<boolean> {
    const lease = this.#leases.get(recovery.id);
    if (lease === undefined || lease.owner !== owner) return false;
    this.#recoveries.set(recovery.id, { ...recovery });
    if (release || recovery.status !== 'running') this.#leases.delete(recovery.id);
    else lease.untilMs = nowMs + leaseMs;
    if (recovery.status !== 'running') this.#running.delete(recovery.subscriptionId);
    return true;
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
  const copied: Subscription = { ...subscription };
  if (subscription.types) copied.types = [...subscription.types];
  if (subscription.grants) copied.grants = [...subscription.grants];
  if (subscription.disabled) copied.disabled = { ...subscription.disabled };
  if (subscription.failing) copied.failing = { ...subscription.failing };
  if (subscription.previousSecret) copied.previousSecret = { ...subscription.previousSecret };
  if (subscription.rateLimit) copied.rateLimit = { ...subscription.rateLimit };
  return copied;
}
