/**
 * The delivery queue port: one row per (event, subscription), durable, at-least-once. A delivery
 * moves `pending` → `in-flight` (an attempt runs) → `succeeded`, back to `pending` (a retry is
 * due later) or `dead` (no attempt left, or the receiver answered `410 Gone`). A delivery found
 * `in-flight` at start was interrupted by a stop and is attempted again.
 *
 * Implemented by `memory-delivery-queue.ts` and `sqlite-delivery-queue.ts`; both pass the contract
 * suite in `test/bridges/webhooks/delivery-queue-contract.ts`.
 */

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

/** A due delivery as `due` lists it: enough to choose which to start, not to send. */
export interface DueDelivery {
  id: string;
  subscriptionId: string;
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

/** How an attempt ended: the state to move an `in-flight` delivery to. */
export interface AttemptOutcome {
  status: 'succeeded' | 'pending' | 'dead';
  /** For `pending`: when the next attempt is due, epoch ms. */
  nextAttemptMs?: number;
  lastError?: string;
  lastStatus?: number;
  /** The attempt was cut short by a stop, not answered: it does not count. */
  uncount?: boolean;
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
   * `pending` deliveries due at `nowMs`, earliest due first, at most `limit`, leaving out those of
   * `excludeSubscriptions` (subscriptions already at their concurrency limit). Changes nothing.
   */
  due(nowMs: number, limit: number, excludeSubscriptions: string[]): Promise<DueDelivery[]>;
  /** Moves a `pending` delivery to `in-flight`, counting the attempt; returns it so, or undefined if it is no longer pending. */
  begin(id: string, nowMs: number): Promise<Delivery | undefined>;
  /** Moves an `in-flight` delivery to the outcome; false if it is no longer in flight (cancelled). */
  finish(id: string, outcome: AttemptOutcome, nowMs: number): Promise<boolean>;
  /**
   * Puts a finished (`succeeded` or `dead`) delivery of `subscriptionId` back to `pending`, due at
   * `nowMs`, with no attempt counted (a fresh retry schedule); its last error and status stay until
   * the next attempt. A `pending` or `in-flight` one is left as it is (`busy`); another
   * subscription's delivery is `absent`.
   */
  redeliver(subscriptionId: string, id: string, nowMs: number): Promise<Redelivery>;
  /** Moves every `in-flight` delivery back to `pending`, due at `nowMs` (recovery at start). Returns how many. */
  requeueInFlight(nowMs: number): Promise<number>;
  /** The earliest `next attempt` of a pending delivery, or undefined when none is pending. */
  nextDueMs(): Promise<number | undefined>;
  /** Deletes the `pending` deliveries of a subscription (it was disabled). Returns how many. */
  cancelPending(subscriptionId: string): Promise<number>;
  /** Deletes every delivery of a subscription (it was deleted). Returns how many. */
  deleteSubscription(subscriptionId: string): Promise<number>;
  /** The deliveries of a subscription in enqueue order after `after` (0 = from the start), optionally of one status. */
  list(subscriptionId: string, options: { status?: DeliveryStatus; after: number; limit: number }): Promise<DeliveryPage>;
  /** Number of deliveries in each status. */
  counts(): Promise<Record<DeliveryStatus, number>>;
  /** Deletes finished deliveries beyond the limits. Returns how many. */
  purge(limits: PurgeLimits): Promise<number>;
  /** Closes the store. Safe to call twice. */
  close(): Promise<void>;
}

/** A count of zero for every status. */
export function zeroCounts(): Record<DeliveryStatus, number> {
  return { pending: 0, 'in-flight': 0, succeeded: 0, dead: 0 };
}
