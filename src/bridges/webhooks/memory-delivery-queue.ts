/**
 * The delivery queue in memory (`storage.driver: memory`): same behaviour as the SQLite queue,
 * nothing kept across restarts. Scans are linear: it is meant for tests and throwaway runs.
 */
import {
  zeroCounts,
  type AttemptOutcome,
  type Delivery,
  type DeliveryPage,
  type DeliveryQueue,
  type DeliveryStatus,
  type DueDelivery,
  type NewDelivery,
  type PurgeLimits,
  type Redelivery,
} from './DeliveryQueue.ts';

/** A `DeliveryQueue` in a Map (insertion order = enqueue order). */
export class MemoryDeliveryQueue implements DeliveryQueue {
  readonly #byId = new Map<string, Delivery>();
  #seq = 0;

  async open(): Promise<void> {}

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    let added = 0;
    for (const d of deliveries) {
      if (this.#byId.has(d.id)) continue;
      this.#seq += 1;
      this.#byId.set(d.id, { ...d, seq: this.#seq, status: 'pending', attempts: 0, createdMs: nowMs, updatedMs: nowMs });
      added += 1;
    }
    return added;
  }

  async due(nowMs: number, limit: number, excludeSubscriptions: string[]): Promise<DueDelivery[]> {
    const excluded = new Set(excludeSubscriptions);
    return [...this.#byId.values()]
      .filter((d) => d.status === 'pending' && d.nextAttemptMs <= nowMs && !excluded.has(d.subscriptionId))
      .sort((a, b) => a.nextAttemptMs - b.nextAttemptMs || a.seq - b.seq)
      .slice(0, limit)
      .map((d) => ({ id: d.id, subscriptionId: d.subscriptionId, nextAttemptMs: d.nextAttemptMs }));
  }

  async begin(id: string, nowMs: number): Promise<Delivery | undefined> {
    const d = this.#byId.get(id);
    if (d?.status !== 'pending') return undefined;
    Object.assign(d, { status: 'in-flight', attempts: d.attempts + 1, updatedMs: nowMs });
    return { ...d };
  }

  async finish(id: string, outcome: AttemptOutcome, nowMs: number): Promise<boolean> {
    const d = this.#byId.get(id);
    if (d?.status !== 'in-flight') return false;
    d.status = outcome.status;
    d.updatedMs = nowMs;
    if (outcome.nextAttemptMs !== undefined) d.nextAttemptMs = outcome.nextAttemptMs;
    if (outcome.uncount) {
      d.attempts -= 1;
      return true;
    }
    d.lastError = outcome.lastError;
    d.lastStatus = outcome.lastStatus;
    return true;
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    const d = this.#byId.get(id);
    if (d?.subscriptionId !== subscriptionId) return { outcome: 'absent' };
    if (d.status === 'pending' || d.status === 'in-flight') return { outcome: 'busy', delivery: { ...d } };
    Object.assign(d, { status: 'pending', attempts: 0, nextAttemptMs: nowMs, updatedMs: nowMs });
    return { outcome: 'redelivered', delivery: { ...d } };
  }

  async requeueInFlight(nowMs: number): Promise<number> {
    const stuck = [...this.#byId.values()].filter((d) => d.status === 'in-flight');
    for (const d of stuck) Object.assign(d, { status: 'pending', nextAttemptMs: nowMs, updatedMs: nowMs });
    return stuck.length;
  }

  async nextDueMs(): Promise<number | undefined> {
    let next: number | undefined;
    for (const d of this.#byId.values()) if (d.status === 'pending' && (next === undefined || d.nextAttemptMs < next)) next = d.nextAttemptMs;
    return next;
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    return this.#deleteWhere((d) => d.subscriptionId === subscriptionId && d.status === 'pending');
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    return this.#deleteWhere((d) => d.subscriptionId === subscriptionId);
  }

  async list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage> {
    const matching = [...this.#byId.values()]
      .filter((d) => d.subscriptionId === subscriptionId && d.seq > options.after && (options.status === undefined || d.status === options.status))
      .sort((a, b) => a.seq - b.seq);
    const deliveries = matching.slice(0, options.limit).map((d) => ({ ...d }));
    return matching.length > options.limit ? { deliveries, next: deliveries[deliveries.length - 1].seq } : { deliveries };
  }

  async counts(): Promise<Record<DeliveryStatus, number>> {
    const counts = zeroCounts();
    for (const d of this.#byId.values()) counts[d.status] += 1;
    return counts;
  }

  async purge(limits: PurgeLimits): Promise<number> {
    let removed = this.#deleteWhere(
      (d) => (d.status === 'succeeded' && d.updatedMs < limits.succeededBeforeMs) || (d.status === 'dead' && d.updatedMs < limits.deadBeforeMs),
    );
    const dead = [...this.#byId.values()].filter((d) => d.status === 'dead').sort((a, b) => a.updatedMs - b.updatedMs || a.seq - b.seq);
    for (const d of dead.slice(0, Math.max(0, dead.length - limits.maxDead))) removed += Number(this.#byId.delete(d.id));
    return removed;
  }

  /** Keeps the data (nothing to release); safe to call twice. */
  async close(): Promise<void> {}

  #deleteWhere(match: (d: Delivery) => boolean): number {
    let removed = 0;
    for (const [id, d] of this.#byId) {
      if (match(d)) removed += Number(this.#byId.delete(id));
    }
    return removed;
  }
}
