/**
 * The delivery queue in memory (`storage.driver: memory`): same behaviour as the SQLite queue,
 * nothing kept across restarts. Its due work is the same `DeliverySchedule` the SQLite queue keeps
 * beside its table; the deliveries themselves live in a Map (insertion order = enqueue order).
 */
import {
  releaseByFinish,
  zeroCounts,
  type ClaimedDelivery,
  type ClaimRef,
  type Delivery,
  type DeliveryPage,
  type DeliveryQueue,
  type DeliveryStatus,
  type FinishedAttempt,
  type NewDelivery,
  type PurgeLimits,
  type Redelivery,
  type Settlement,
} from './DeliveryQueue.ts';
import { DeliverySchedule } from './delivery-schedule.ts';

/** A delivery as held here: its current claim token beside the public fields. */
interface Held extends Delivery {
  claim: number;
}

/** A `DeliveryQueue` in a Map (insertion order = enqueue order). */
export class MemoryDeliveryQueue implements DeliveryQueue {
  readonly #byId = new Map<string, Held>();
  readonly #schedule = new DeliverySchedule();
  #seq = 0;

  async open(): Promise<void> {}

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    let added = 0;
    for (const d of deliveries) {
      if (this.#byId.has(d.id)) continue;
      this.#seq += 1;
      this.#byId.set(d.id, { ...d, seq: this.#seq, status: 'pending', attempts: 0, claim: 0, createdMs: nowMs, updatedMs: nowMs });
      this.#schedule.add({ seq: this.#seq, id: d.id, subscriptionId: d.subscriptionId, dueMs: d.nextAttemptMs, leaseUntilMs: undefined, claim: 0 }, nowMs);
      added += 1;
    }
    return added;
  }

  async claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    return this.#schedule.claim(nowMs, limit, leaseMs, (entry, reclaimed, leaseUntilMs) => {
      const d = this.#byId.get(entry.id)!;
      Object.assign(d, { status: 'in-flight', attempts: d.attempts + 1, claim: d.claim + 1, updatedMs: nowMs });
      return { ...publicFields(d), claim: d.claim, leaseUntilMs, reclaimed };
    });
  }

  async finish(attempts: FinishedAttempt[], nowMs: number): Promise<boolean[]> {
    return attempts.map(({ id, claim, outcome }) => {
      const d = this.#byId.get(id);
      if (d?.status !== 'in-flight' || d.claim !== claim) return false;
      d.status = outcome.status;
      d.updatedMs = nowMs;
      if (outcome.nextAttemptMs !== undefined) d.nextAttemptMs = outcome.nextAttemptMs;
      if (outcome.uncount) d.attempts -= 1;
      else Object.assign(d, { lastError: outcome.lastError, lastStatus: outcome.lastStatus });
      this.#schedule.settle(id, d.status === 'pending' ? d.nextAttemptMs : undefined, nowMs);
      return true;
    });
  }

  async settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement> {
    const recorded = await this.finish(attempts, nowMs);
    return { recorded, claimed: await this.claim(nowMs, limit, leaseMs) };
  }

  release(claims: ClaimRef[], nowMs: number): Promise<number> {
    return releaseByFinish(this, claims, nowMs);
  }

  async redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery> {
    const d = this.#byId.get(id);
    if (d?.subscriptionId !== subscriptionId) return { outcome: 'absent' };
    if (d.status === 'pending' || d.status === 'in-flight') return { outcome: 'busy', delivery: publicFields(d) };
    Object.assign(d, { status: 'pending', attempts: 0, nextAttemptMs: nowMs, updatedMs: nowMs });
    this.#schedule.add({ seq: d.seq, id, subscriptionId, dueMs: nowMs, leaseUntilMs: undefined, claim: d.claim }, nowMs);
    return { outcome: 'redelivered', delivery: publicFields(d) };
  }

  async nextDueMs(): Promise<number | undefined> {
    return this.#schedule.nextDueMs();
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    return this.#forget(this.#schedule.dropSubscription(subscriptionId, false, Date.now()));
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    this.#schedule.dropSubscription(subscriptionId, true, Date.now());
    return this.#deleteWhere((d) => d.subscriptionId === subscriptionId);
  }

  async get(subscriptionId: string, id: string): Promise<Delivery | undefined> {
    const d = this.#byId.get(id);
    return d?.subscriptionId === subscriptionId ? publicFields(d) : undefined;
  }

  async list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage> {
    const matching = [...this.#byId.values()]
      .filter((d) => d.subscriptionId === subscriptionId && d.seq > options.after && (options.status === undefined || d.status === options.status))
      .sort((a, b) => a.seq - b.seq);
    const deliveries = matching.slice(0, options.limit).map(publicFields);
    return matching.length > options.limit ? { deliveries, next: deliveries[deliveries.length - 1].seq } : { deliveries };
  }

  async counts(): Promise<Record<DeliveryStatus, number>> {
    const counts = zeroCounts();
    for (const d of this.#byId.values()) counts[d.status] += 1;
    return counts;
  }

  async unfinished(): Promise<number> {
    return this.#schedule.size;
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

  /** Deletes the deliveries `ids`; returns how many. */
  #forget(ids: string[]): number {
    for (const id of ids) this.#byId.delete(id);
    return ids.length;
  }

  #deleteWhere(match: (d: Held) => boolean): number {
    let removed = 0;
    for (const [id, d] of this.#byId) if (match(d)) removed += Number(this.#byId.delete(id));
    return removed;
  }
}

/** A copy of the public fields of a held delivery (no claim token). */
function publicFields(d: Held): Delivery {
  const { claim: _claim, ...delivery } = d;
  return delivery;
}
