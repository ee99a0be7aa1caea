/**
 * The delivery queue in memory (`storage.driver: memory`): same behaviour as the SQLite queue,
 * nothing kept across restarts. It keeps the same per-subscription lanes as the durable queues
 * (when each subscription can next give work), but finds a lane's deliveries by scanning it: it is
 * meant for tests and throwaway runs.
 */
import {
  PER_SUBSCRIPTION,
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

/** A delivery as held here: its claim token and lease beside the public fields. */
interface Held extends Delivery {
  claim: number;
  leaseUntilMs?: number;
}

/** A `DeliveryQueue` in a Map (insertion order = enqueue order). */
export class MemoryDeliveryQueue implements DeliveryQueue {
  readonly #byId = new Map<string, Held>();
  /** Unfinished (pending or in-flight) deliveries of each subscription. */
  readonly #lanes = new Map<string, Set<Held>>();
  /** When each lane can next give work (see `DeliveryQueue`); lanes with nothing unfinished are absent. */
  readonly #ready = new Map<string, number>();
  #seq = 0;

  async open(): Promise<void> {}

  async enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number> {
    const touched = new Set<string>();
    let added = 0;
    for (const d of deliveries) {
      if (this.#byId.has(d.id)) continue;
      this.#seq += 1;
      const held: Held = { ...d, seq: this.#seq, status: 'pending', attempts: 0, claim: 0, createdMs: nowMs, updatedMs: nowMs };
      this.#byId.set(d.id, held);
      this.#laneOf(d.subscriptionId).add(held);
      touched.add(d.subscriptionId);
      added += 1;
    }
    for (const subscriptionId of touched) this.#updateLane(subscriptionId, nowMs);
    return added;
  }

  async claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]> {
    const claimed: ClaimedDelivery[] = [];
    const lanes = [...this.#ready].filter(([, readyMs]) => readyMs <= nowMs).sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1));
    for (const [subscriptionId] of lanes) {
      if (claimed.length >= limit) break;
      const unfinished = [...(this.#lanes.get(subscriptionId) ?? [])];
      const live = unfinished.filter((d) => d.status === 'in-flight' && d.leaseUntilMs! > nowMs).length;
      const expired = unfinished.filter((d) => d.status === 'in-flight' && d.leaseUntilMs! <= nowMs).sort((a, b) => a.leaseUntilMs! - b.leaseUntilMs! || a.seq - b.seq);
      const due = unfinished.filter((d) => d.status === 'pending' && d.nextAttemptMs <= nowMs).sort((a, b) => a.nextAttemptMs - b.nextAttemptMs || a.seq - b.seq);
      const taken = [...expired, ...due].slice(0, Math.max(0, Math.min(PER_SUBSCRIPTION - live, limit - claimed.length)));
      for (const d of taken) {
        const reclaimed = d.status === 'in-flight';
        Object.assign(d, { status: 'in-flight', attempts: d.attempts + 1, claim: d.claim + 1, leaseUntilMs: nowMs + leaseMs, updatedMs: nowMs });
        claimed.push({ ...publicFields(d), claim: d.claim, leaseUntilMs: nowMs + leaseMs, reclaimed });
      }
      this.#updateLane(subscriptionId, nowMs);
    }
    return claimed;
  }

  async finish(attempts: FinishedAttempt[], nowMs: number): Promise<boolean[]> {
    return attempts.map(({ id, claim, outcome }) => {
      const d = this.#current(id, claim);
      if (!d) return false;
      d.status = outcome.status;
      d.updatedMs = nowMs;
      delete d.leaseUntilMs;
      if (outcome.nextAttemptMs !== undefined) d.nextAttemptMs = outcome.nextAttemptMs;
      if (outcome.uncount) d.attempts -= 1;
      else Object.assign(d, { lastError: outcome.lastError, lastStatus: outcome.lastStatus });
      if (d.status !== 'pending') this.#lanes.get(d.subscriptionId)?.delete(d);
      this.#updateLane(d.subscriptionId, nowMs);
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
    this.#laneOf(d.subscriptionId).add(d);
    this.#updateLane(d.subscriptionId, nowMs);
    return { outcome: 'redelivered', delivery: publicFields(d) };
  }

  async nextDueMs(): Promise<number | undefined> {
    let next: number | undefined;
    for (const readyMs of this.#ready.values()) if (next === undefined || readyMs < next) next = readyMs;
    return next;
  }

  async cancelPending(subscriptionId: string): Promise<number> {
    const removed = this.#deleteWhere((d) => d.subscriptionId === subscriptionId && d.status === 'pending');
    this.#updateLane(subscriptionId, Date.now());
    return removed;
  }

  async deleteSubscription(subscriptionId: string): Promise<number> {
    const removed = this.#deleteWhere((d) => d.subscriptionId === subscriptionId);
    this.#updateLane(subscriptionId, Date.now());
    return removed;
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
    let n = 0;
    for (const lane of this.#lanes.values()) n += lane.size;
    return n;
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

  /** The in-flight delivery `id` while `claim` is its current claim. */
  #current(id: string, claim: number): Held | undefined {
    const d = this.#byId.get(id);
    return d?.status === 'in-flight' && d.claim === claim ? d : undefined;
  }

  #laneOf(subscriptionId: string): Set<Held> {
    let lane = this.#lanes.get(subscriptionId);
    if (!lane) this.#lanes.set(subscriptionId, (lane = new Set()));
    return lane;
  }

  /** Sets when a lane can next give work: at `PER_SUBSCRIPTION` live leases their earliest end, else its earliest due delivery or lease end. */
  #updateLane(subscriptionId: string, nowMs: number): void {
    const unfinished = [...(this.#lanes.get(subscriptionId) ?? [])];
    const leases = unfinished.filter((d) => d.status === 'in-flight').map((d) => d.leaseUntilMs!);
    const live = leases.filter((until) => until > nowMs);
    const candidates = live.length >= PER_SUBSCRIPTION ? live : [...leases, ...unfinished.filter((d) => d.status === 'pending').map((d) => d.nextAttemptMs)];
    if (candidates.length > 0) this.#ready.set(subscriptionId, Math.min(...candidates));
    else {
      this.#ready.delete(subscriptionId);
      this.#lanes.delete(subscriptionId);
    }
  }

  #deleteWhere(match: (d: Held) => boolean): number {
    let removed = 0;
    for (const [id, d] of this.#byId) {
      if (!match(d)) continue;
      removed += Number(this.#byId.delete(id));
      this.#lanes.get(d.subscriptionId)?.delete(d);
    }
    return removed;
  }
}

/** A copy of the public fields of a held delivery (no claim token, no lease). */
function publicFields(d: Held): Delivery {
  const { claim: _claim, leaseUntilMs: _lease, ...delivery } = d;
  return { ...delivery };
}
