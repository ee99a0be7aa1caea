/**
 * The delivery queue port: one row per (event, subscription), durable, at-least-once. A delivery
 * moves `pending` → `in-flight` (an attempt runs) → `succeeded`, back to `pending` (a retry is
 * due later) or `dead` (no attempt left, or the receiver answered `410 Gone`).
 *
 * Leased claims (the shape of `Outbox.claimDue`): `claim` moves due deliveries to `in-flight` under
 * a lease and a claim token, counting the attempt, never more than `PER_SUBSCRIPTION` in flight per
 * subscription across every claimer (replicas on one store included). A claimed delivery is hidden
 * from every other claimer until it is finished, released, or its lease runs out; then the next
 * `claim` takes it over (`reclaimed`). The interrupted attempt stays counted: it was started and may
 * have reached the receiver, and counting it bounds the retries of a delivery whose attempts keep
 * dying with their claimer. `finish` and `release` name the claim, so a claimer whose lease ran out
 * cannot overwrite the outcome of the claimer that took the delivery over.
 *
 * Finding due work never walks a subscription's backlog: each store keeps, per subscription, when it
 * can next give something (its earliest due delivery, or, when it has `PER_SUBSCRIPTION` in flight,
 * its earliest lease end), and `claim` reads subscriptions in that order.
 *
 * Implemented by `memory-delivery-queue.ts`, `sqlite-delivery-queue.ts` and
 * `redis-delivery-queue.ts`; all pass the contract suite in
 * `test/bridges/webhooks/delivery-queue-contract.ts`.
 */
import type { AttemptOutcome } from '../../egress/retry-policy.ts';

/** How an attempt ended (`egress/retry-policy.ts`, shared with A2A push): the state to move an `in-flight` delivery to. */
export type { AttemptOutcome };

/** Attempts in flight per subscription at most, across every claimer of a store. */
export const PER_SUBSCRIPTION = 4;

/** The state of one delivery. */
export type DeliveryStatus = 'pending' | 'in-flight' | 'succeeded' | 'dead';

/** Every status, in lifecycle order. */
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ['pending', 'in-flight', 'succeeded', 'dead'];

/** A delivery to enqueue. */
export interface NewDelivery {
  /** The message id (`webhook-id`): stable across the retries of one event to one subscription. */
  id: string;
  subscriptionId: string;
  eventId: string;
  eventType: string;
  /** The body: the event envelope as JSON. */
  payload: string;
  /** When the first attempt is due, epoch ms. */
  nextAttemptMs: number;
}

/** A delivery in the queue. */
export interface Delivery extends NewDelivery {
  /** Enqueue order: a positive integer, strictly increasing. */
  seq: number;
  status: DeliveryStatus;
  /** Attempts started so far. */
  attempts: number;
  /** Why the last attempt failed (never the response body). */
  lastError?: string;
  /** HTTP status of the last answer, if one came. */
  lastStatus?: number;
  createdMs: number;
  updatedMs: number;
}

/** A delivery `claim` gave: in flight under a lease, this attempt counted in `attempts`. */
export interface ClaimedDelivery extends Delivery {
  /** The claim token: `finish` and `release` with another token (an older claim of this delivery) are refused. */
  claim: number;
  /** When the lease ends, epoch ms: the delivery may be taken over by another claimer from then on. */
  leaseUntilMs: number;
  /** This claim took the delivery over from a claimer whose lease ran out (it may have died mid-attempt). */
  reclaimed: boolean;
}

/** One claim, as `finish` and `release` name it. */
export interface ClaimRef {
  id: string;
  claim: number;
}

/** The end of one claimed attempt, as `finish` records it. */
export interface FinishedAttempt extends ClaimRef {
  outcome: AttemptOutcome;
}

/** What `settle` did: per attempt, whether its outcome was recorded (as `finish` answers), then what it claimed. */
export interface Settlement {
  recorded: boolean[];
  claimed: ClaimedDelivery[];
}

/** What `redeliver` did: put a finished delivery back, found it still pending or in flight (nothing changed), or found none. */
export type Redelivery =
  | { outcome: 'redelivered'; delivery: Delivery }
  | { outcome: 'busy'; delivery: Delivery }
  | { outcome: 'absent' };

/** A page of `list`; `next` is set when more may follow. */
export interface DeliveryPage {
  deliveries: Delivery[];
  next?: number;
}

/** What `purge` removes: finished deliveries kept for inspection, by age and (dead ones) by count. */
export interface PurgeLimits {
  succeededBeforeMs: number;
  deadBeforeMs: number;
  /** Dead deliveries kept at most (the oldest beyond go first). */
  maxDead: number;
}

export interface DeliveryQueue {
  /** Opens the store (creates tables). Idempotent. */
  open(): Promise<void>;
  /** Adds deliveries; an id already in the queue is skipped (re-enqueueing is safe). Returns how many were added. */
  enqueue(deliveries: NewDelivery[], nowMs: number): Promise<number>;
  /**
   * Leased claim: up to `limit` deliveries due at `nowMs` (pending with `nextAttemptMs <= nowMs`, or
   * in flight under a lease that ended by `nowMs`), subscription by subscription in the order they
   * became due, then by due time and enqueue order, never bringing a subscription above
   * `PER_SUBSCRIPTION` live leases. Atomically, each becomes `in-flight` with `attempts + 1`, a new
   * claim token and a lease until `nowMs + leaseMs`; of two concurrent claimers, never both get one
   * delivery.
   */
  claim(nowMs: number, limit: number, leaseMs: number): Promise<ClaimedDelivery[]>;
  /**
   * Records the outcomes of claimed attempts in ONE durable write (a transaction, one script),
   * in order. Returns, per attempt, whether it was recorded: false when the claim is no longer
   * current (its lease ran out and another claimer took the delivery, or it was cancelled).
   */
  finish(attempts: FinishedAttempt[], nowMs: number): Promise<boolean[]>;
  /**
   * `finish(attempts)` then `claim(nowMs, limit, leaseMs)` in ONE write: a dispatcher refills the
   * slots its ended attempts free without a second transaction (or script).
   */
  settle(attempts: FinishedAttempt[], nowMs: number, limit: number, leaseMs: number): Promise<Settlement>;
  /** Gives claims back unattempted (shutdown): `pending`, due at `nowMs`, the attempt not counted. Stale claims are skipped. Returns how many. */
  release(claims: ClaimRef[], nowMs: number): Promise<number>;
  /**
   * Puts a finished (`succeeded` or `dead`) delivery of `subscriptionId` back to `pending`, due at
   * `nowMs`, with no attempt counted (a fresh retry schedule); its last error and status stay until
   * the next attempt. A `pending` or `in-flight` one is left as it is (`busy`); another
   * subscription's delivery is `absent`.
   */
  redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery>;
  /**
   * The earliest instant `claim` may find work: the earliest due time over subscriptions with a free
   * slot, or the earliest lease end of a subscription at `PER_SUBSCRIPTION`; undefined when nothing is
   * pending or in flight.
   */
  nextDueMs(): Promise<number | undefined>;
  /** Deletes the `pending` deliveries of a subscription (it was disabled). Returns how many. */
  cancelPending(subscriptionId: string): Promise<number>;
  /** Deletes every delivery of a subscription (it was deleted). Returns how many. */
  deleteSubscription(subscriptionId: string): Promise<number>;
  /** The delivery `id` of `subscriptionId` as it is now, in any status; undefined when there is none (or it is another subscription's). */
  get(subscriptionId: string, id: string): Promise<Delivery | undefined>;
  /** The deliveries of a subscription in enqueue order after `after` (0 = from the start), optionally of one status. */
  list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage>;
  /** Number of deliveries in each status. */
  counts(): Promise<Record<DeliveryStatus, number>>;
  /** Number of unfinished (pending or in-flight) deliveries: what the fan-out bounds. Reads no finished delivery. */
  unfinished(): Promise<number>;
  /** Deletes finished deliveries beyond the limits. Returns how many. */
  purge(limits: PurgeLimits): Promise<number>;
  /** Closes the store. Safe to call twice. */
  close(): Promise<void>;
}

/** `release` by way of `finish` (what every adapter does): each claim back to `pending`, due at `nowMs`, not counted. */
export async function releaseByFinish(queue: Pick<DeliveryQueue, 'finish'>, claims: ClaimRef[], nowMs: number): Promise<number> {
  const released = await queue.finish(claims.map(({ id, claim }) => ({ id, claim, outcome: { status: 'pending', nextAttemptMs: nowMs, uncount: true } })), nowMs);
  return released.filter(Boolean).length;
}

/** A count of zero for every status. */
export function zeroCounts(): Record<DeliveryStatus, number> {
  return { pending: 0, 'in-flight': 0, succeeded: 0, dead: 0 };
}
