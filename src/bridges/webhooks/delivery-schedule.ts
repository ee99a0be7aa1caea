/**
 * The schedule of a single-process delivery queue (memory and SQLite): which unfinished deliveries
 * each subscription has, when each is due or when its lease ends, and the order `claim` takes them
 * in (`DeliveryQueue`: subscription by subscription in the order they became due, then by due time
 * and enqueue order, never above `PER_SUBSCRIPTION` live leases per subscription).
 *
 * Held in memory (issue 28): a claim reads no table and an outcome updates no index of due work, so
 * the SQLite queue writes only the delivery rows themselves. The SQLite queue builds it from its
 * table when it opens, so it assumes it is the only queue on its file (one gateway process per
 * SQLite file, as the event log does); a row another process changed is refused by the row's claim
 * token and dropped from here, never claimed twice.
 *
 * Per subscription (a lane): its pending deliveries in a heap by (due, seq), its leased ones in a
 * set (at most `PER_SUBSCRIPTION` live, plus leases that ran out), and when it can next give work.
 * Across lanes: a heap by (ready time, subscription id) whose stale entries (a lane changed since)
 * are skipped as they come up, and rebuilt when they outnumber the lanes.
 */
import TinyQueue from 'tinyqueue';
import { PER_SUBSCRIPTION } from './DeliveryQueue.ts';

/** One unfinished delivery as the schedule holds it. */
export interface Scheduled {
  seq: number;
  id: string;
  subscriptionId: string;
  /** Pending: when it is due, epoch ms. */
  dueMs: number;
  /** In flight: when its lease ends, epoch ms; undefined while pending. */
  leaseUntilMs: number | undefined;
  /** The current claim token (counts the claims so far). */
  claim: number;
}

/** How a queue makes one claim durable: the claimed delivery, or undefined when its row was not as scheduled (dropped from the schedule). */
export type Take<T> = (entry: Scheduled, reclaimed: boolean, leaseUntilMs: number) => T | undefined;

interface Lane {
  subscriptionId: string;
  pending: TinyQueue<Scheduled>;
  leased: Set<Scheduled>;
  /** When the lane can next give work; undefined when it holds nothing. */
  readyMs: number | undefined;
  /** Bumped at every change of `readyMs`: older entries of the ready heap are stale. */
  version: number;
}

interface Ready {
  readyMs: number;
  lane: Lane;
  version: number;
}

const byDue = (a: Scheduled, b: Scheduled): number => a.dueMs - b.dueMs || a.seq - b.seq;
const byReady = (a: Ready, b: Ready): number => a.readyMs - b.readyMs || (a.lane.subscriptionId < b.lane.subscriptionId ? -1 : a.lane.subscriptionId > b.lane.subscriptionId ? 1 : 0);

/** The unfinished deliveries of a queue and the order they are claimed in. */
export class DeliverySchedule {
  readonly #byId = new Map<string, Scheduled>();
  readonly #lanes = new Map<string, Lane>();
  #ready = new TinyQueue<Ready>([], byReady);
  #leased = 0;

  /** Number of unfinished (pending or in-flight) deliveries. */
  get size(): number {
    return this.#byId.size;
  }

  /** Number of in-flight deliveries (leases that ran out included, until claimed again or finished). */
  get inFlight(): number {
    return this.#leased;
  }

  /** The unfinished delivery `id`, if scheduled. */
  get(id: string): Scheduled | undefined {
    return this.#byId.get(id);
  }

  /** Schedules an unfinished delivery: pending when `leaseUntilMs` is undefined, else in flight under that lease. */
  add(entry: Scheduled, nowMs: number): void {
    this.#drop(entry.id);
    this.#byId.set(entry.id, entry);
    const lane = this.#laneOf(entry.subscriptionId);
    if (entry.leaseUntilMs === undefined) lane.pending.push(entry);
    else {
      lane.leased.add(entry);
      this.#leased += 1;
    }
    this.#update(lane, nowMs);
  }

  /**
   * Claims up to `limit` deliveries due at `nowMs` in the queue's order, each made durable by
   * `take` before the schedule moves it in flight (claim token + 1, leased until `nowMs + leaseMs`).
   */
  claim<T>(nowMs: number, limit: number, leaseMs: number, take: Take<T>): T[] {
    const claimed: T[] = [];
    while (claimed.length < limit) {
      const lane = this.#nextReady(nowMs);
      if (!lane) break;
      let free = Math.min(PER_SUBSCRIPTION - this.#liveLeases(lane, nowMs), limit - claimed.length);
      const expired = [...lane.leased].filter((e) => e.leaseUntilMs! <= nowMs).sort((a, b) => a.leaseUntilMs! - b.leaseUntilMs! || a.seq - b.seq);
      for (const entry of expired) {
        if (free <= 0) break;
        if (this.#take(entry, true, nowMs + leaseMs, take, claimed)) free -= 1;
      }
      while (free > 0 && lane.pending.length > 0 && lane.pending.peek()!.dueMs <= nowMs) {
        const entry = lane.pending.pop()!;
        lane.leased.add(entry);
        this.#leased += 1;
        if (this.#take(entry, false, nowMs + leaseMs, take, claimed)) free -= 1;
      }
      this.#update(lane, nowMs);
    }
    return claimed;
  }

  /** Ends the claim of in-flight `id`: pending again, due at `dueMs`, or (undefined) finished and forgotten. */
  settle(id: string, dueMs: number | undefined, nowMs: number): void {
    const entry = this.#byId.get(id);
    if (!entry) return;
    this.#drop(id);
    if (dueMs === undefined) return this.#update(this.#lanes.get(entry.subscriptionId)!, nowMs);
    entry.dueMs = dueMs;
    entry.leaseUntilMs = undefined;
    this.add(entry, nowMs);
  }

  /** Forgets the pending deliveries of a subscription (or, with `inFlightToo`, all of them); returns their ids. */
  dropSubscription(subscriptionId: string, inFlightToo: boolean, nowMs: number): string[] {
    const lane = this.#lanes.get(subscriptionId);
    if (!lane) return [];
    const dropped = lane.pending.data.map((e) => e.id);
    lane.pending = new TinyQueue<Scheduled>([], byDue);
    if (inFlightToo) {
      dropped.push(...[...lane.leased].map((e) => e.id));
      this.#leased -= lane.leased.size;
      lane.leased.clear();
    }
    for (const id of dropped) this.#byId.delete(id);
    this.#update(lane, nowMs);
    return dropped;
  }

  /** The earliest instant a claim may find work (`DeliveryQueue.nextDueMs`); undefined when nothing is unfinished. */
  nextDueMs(): number | undefined {
    return this.#top()?.readyMs;
  }

  /** Claims one entry through `take`; false (and forgotten) when its row was not as scheduled. */
  #take<T>(entry: Scheduled, reclaimed: boolean, leaseUntilMs: number, take: Take<T>, claimed: T[]): boolean {
    const taken = take(entry, reclaimed, leaseUntilMs);
    if (taken === undefined) {
      this.#lanes.get(entry.subscriptionId)!.leased.delete(entry);
      this.#leased -= 1;
      this.#byId.delete(entry.id);
      return false;
    }
    entry.claim += 1;
    entry.leaseUntilMs = leaseUntilMs;
    claimed.push(taken);
    return true;
  }

  /** Removes `id` wherever it is (before it is scheduled again). */
  #drop(id: string): void {
    const entry = this.#byId.get(id);
    if (!entry) return;
    const lane = this.#lanes.get(entry.subscriptionId)!;
    if (lane.leased.delete(entry)) this.#leased -= 1;
    else lane.pending = new TinyQueue(lane.pending.data.filter((e) => e !== entry), byDue);
    this.#byId.delete(id);
  }

  #laneOf(subscriptionId: string): Lane {
    let lane = this.#lanes.get(subscriptionId);
    if (!lane) {
      lane = { subscriptionId, pending: new TinyQueue<Scheduled>([], byDue), leased: new Set(), readyMs: undefined, version: 0 };
      this.#lanes.set(subscriptionId, lane);
    }
    return lane;
  }

  #liveLeases(lane: Lane, nowMs: number): number {
    let live = 0;
    for (const entry of lane.leased) if (entry.leaseUntilMs! > nowMs) live += 1;
    return live;
  }

  /**
   * Sets when a lane can next give work: at `PER_SUBSCRIPTION` live leases, the earliest of them to
   * end; otherwise its earliest due delivery or lease end (a lease that ran out is claimable). A
   * lane with nothing unfinished is removed.
   */
  #update(lane: Lane, nowMs: number): void {
    let readyMs: number | undefined;
    const live = this.#liveLeases(lane, nowMs);
    for (const entry of lane.leased) {
      if (live >= PER_SUBSCRIPTION && entry.leaseUntilMs! <= nowMs) continue;
      if (readyMs === undefined || entry.leaseUntilMs! < readyMs) readyMs = entry.leaseUntilMs!;
    }
    if (live < PER_SUBSCRIPTION && lane.pending.length > 0) readyMs = Math.min(readyMs ?? Infinity, lane.pending.peek()!.dueMs);
    if (readyMs === undefined) {
      // Nothing unfinished: the lane goes (its entries in the ready heap are stale from now on).
      lane.version += 1;
      this.#lanes.delete(lane.subscriptionId);
      return;
    }
    if (readyMs === lane.readyMs) return;
    lane.readyMs = readyMs;
    lane.version += 1;
    this.#ready.push({ readyMs, lane, version: lane.version });
    // Stale entries pile up as lanes change: rebuilt from the lanes when they outnumber them.
    if (this.#ready.length > 4 * this.#lanes.size + 64) {
      const current = [...this.#lanes.values()].filter((l) => l.readyMs !== undefined);
      this.#ready = new TinyQueue(current.map((l) => ({ readyMs: l.readyMs!, lane: l, version: l.version })), byReady);
    }
  }

  /** The lane to claim from next at `nowMs` (taken off the ready heap), or undefined when none is ready. */
  #nextReady(nowMs: number): Lane | undefined {
    const top = this.#top();
    if (!top || top.readyMs > nowMs) return undefined;
    this.#ready.pop();
    // Popped: a lane left unchanged by its claim must be pushed again.
    top.lane.readyMs = undefined;
    return top.lane;
  }

  /** The current entry at the top of the ready heap (stale ones removed). */
  #top(): Ready | undefined {
    for (let top = this.#ready.peek(); top; top = this.#ready.peek()) {
      if (top.version === top.lane.version && this.#lanes.get(top.lane.subscriptionId) === top.lane) return top;
      this.#ready.pop();
    }
    return undefined;
  }
}
