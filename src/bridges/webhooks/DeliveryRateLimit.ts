/**
 * The per-endpoint rate port (`webhook.rateLimit.perSecond` on a subscription, default
 * `webhooks.rateLimit.perSecond`): strict spacing (GCRA, no burst) of the attempts to one
 * subscription, so a receiver never sees more than `perSecond` a second from the gateway. A
 * delivery that may not go yet is never dropped: the dispatcher puts it back in the queue, due when
 * its turn comes, its attempt not counted. Implemented by `MemoryDeliveryRateLimit` (one process:
 * memory and SQLite) and `RedisDeliveryRateLimit` (shared by every replica, on Redis's clock); both
 * pass `test/bridges/webhooks/delivery-rate-limit-contract.ts`.
 */

export interface DeliveryRateLimit {
  /** Opens the limiter (connects). Idempotent. */
  open(): Promise<void>;
  /**
   * Books the next attempt of `subscriptionId` at `perSecond` at most: 0 when it may go now (the
   * slot is taken), else how long until it may, ms (nothing booked).
   */
  reserve(subscriptionId: string, perSecond: number): Promise<number>;
  /** Closes the limiter. Safe to call twice. */
  close(): Promise<void>;
}

/** Subscriptions a memory limiter tracks at most; beyond, the one idle longest is forgotten (it was free to go anyway). */
export const MAX_TRACKED_SUBSCRIPTIONS = 100_000;

/** Strict spacing by subscription in this process. */
export class MemoryDeliveryRateLimit implements DeliveryRateLimit {
  /** Subscription id → theoretical arrival time of its next attempt, epoch ms (insertion order = oldest first). */
  readonly #next = new Map<string, number>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  async open(): Promise<void> {}

  async reserve(subscriptionId: string, perSecond: number): Promise<number> {
    const now = this.#now();
    const due = Math.max(now, this.#next.get(subscriptionId) ?? now);
    if (due > now) return due - now;
    this.#next.delete(subscriptionId);
    if (this.#next.size >= MAX_TRACKED_SUBSCRIPTIONS) this.#next.delete(this.#next.keys().next().value!);
    this.#next.set(subscriptionId, now + 1000 / perSecond);
    return 0;
  }

  async close(): Promise<void> {}
}
