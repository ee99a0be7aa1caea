/**
 * Operational events of the webhook bridge (issue 28): what happens to a subscription is also an
 * event in the log, so it reaches `GET /events`, SSE, other webhooks, MCP and the console like any
 * event. Source `urn:proto-gateway:webhooks`, correlation id = the subscription id, data without
 * the subscription's URL or principal (every reader of the log sees these events):
 *
 * - `SubscriptionDisabledV1` `{ subscriptionId, reason: gone|failing, failures?, failingSince? }`
 * - `SubscriptionEnabledV1` `{ subscriptionId }`
 * - `DeliveryExhaustedV1` `{ subscriptionId, deliveryId, eventId, eventType, attempts, lastStatus?, lastError? }`
 *   after the last attempt of a delivery failed (it is a dead letter now)
 * - `SubscriptionRecoveredV1` `{ subscriptionId, failures, failingSince }`: a delivery succeeded
 *   after a failing streak (the endpoint healed)
 *
 * Only the writer whose store change took effect emits (`setStatus` and `recordAttempt` say so
 * atomically), so replicas never double an event. A delivery of one of these events that is
 * exhausted emits nothing: two failing receivers subscribed to them would otherwise feed each other.
 */
import type { Logger } from 'pino';
import { v5 as uuidv5 } from 'uuid';
import type { CloudEvent, EventLog } from '../../log/EventLog.ts';
import type { Delivery } from './DeliveryQueue.ts';
import type { DisabledReason, FailingStreak } from './SubscriptionStore.ts';
import { appendTraced } from '../../log/traced-append.ts';

/** The `source` of every operational event of the webhook bridge. */
export const WEBHOOKS_SOURCE = 'urn:proto-gateway:webhooks';

/** UUIDv5 namespace of operational event ids. Never change it. */
export const OPERATIONAL_EVENT_NAMESPACE = '5d0c8a34-9d0e-4b7e-a3f1-6c2e8f1b7a90';

/** The operational event types. */
export const OPERATIONAL_EVENT_TYPES = ['SubscriptionDisabledV1', 'SubscriptionEnabledV1', 'DeliveryExhaustedV1', 'SubscriptionRecoveredV1'] as const;

/** One operational event type. */
export type OperationalEventType = (typeof OPERATIONAL_EVENT_TYPES)[number];

/** True for a type `OperationalEvents` emits. */
export function isOperationalEventType(type: string): boolean {
  return (OPERATIONAL_EVENT_TYPES as readonly string[]).includes(type);
}

/** Appends the operational events of the webhook bridge to the log. A failed append is logged, never thrown: the change it reports has happened. */
export class OperationalEvents {
  readonly #log: Pick<EventLog, 'append'>;
  readonly #logger: Logger;

  constructor(log: Pick<EventLog, 'append'>, logger: Logger) {
    this.#log = log;
    this.#logger = logger;
  }

  /** `subscriptionId` was disabled at `atMs` (a `410 Gone`, or failing for `webhooks.disableAfter`). */
  disabled(subscriptionId: string, reason: DisabledReason, atMs: number, streak?: FailingStreak): Promise<void> {
    const data: Record<string, unknown> = { subscriptionId, reason };
    if (streak) Object.assign(data, streakData(streak));
    return this.#emit('SubscriptionDisabledV1', subscriptionId, `${atMs}`, atMs, data);
  }

  /** `subscriptionId` was enabled again at `atMs`. */
  enabled(subscriptionId: string, atMs: number): Promise<void> {
    return this.#emit('SubscriptionEnabledV1', subscriptionId, `${atMs}`, atMs, { subscriptionId });
  }

  /**
   * The last attempt of `delivery` failed at `atMs`: it is a dead letter. Nothing for a delivery of
   * an operational event. Every caller reads this event, so it names the delivered event (id and
   * type) only when `nameEvent` says every caller sees that event too (per-caller catalogues); the
   * subscription's owner finds it among its deliveries either way.
   */
  exhausted(delivery: Delivery, atMs: number, last: { lastStatus?: number; lastError?: string }, nameEvent = true): Promise<void> {
    if (isOperationalEventType(delivery.eventType)) return Promise.resolve();
    const data: Record<string, unknown> = {
      subscriptionId: delivery.subscriptionId,
      deliveryId: delivery.id,
      ...(nameEvent && { eventId: delivery.eventId, eventType: delivery.eventType }),
      attempts: delivery.attempts,
    };
    if (last.lastStatus !== undefined) data.lastStatus = last.lastStatus;
    if (last.lastError !== undefined) data.lastError = last.lastError;
    return this.#emit('DeliveryExhaustedV1', delivery.subscriptionId, `${delivery.id}\n${atMs}`, atMs, data);
  }

  /** A delivery to `subscriptionId` succeeded at `atMs` after the failing `streak`. */
  recovered(subscriptionId: string, streak: FailingStreak, atMs: number): Promise<void> {
    return this.#emit('SubscriptionRecoveredV1', subscriptionId, `${atMs}`, atMs, { subscriptionId, ...streakData(streak) });
  }

  async #emit(type: OperationalEventType, subscriptionId: string, key: string, atMs: number, data: Record<string, unknown>): Promise<void> {
    const event: CloudEvent = {
      specversion: '1.0',
      id: uuidv5(`${type}\n${subscriptionId}\n${key}`, OPERATIONAL_EVENT_NAMESPACE),
      source: WEBHOOKS_SOURCE,
      type,
      datacontenttype: 'application/json',
      correlationid: subscriptionId,
      time: new Date(atMs).toISOString(),
      data,
    };
    try {
      await appendTraced(this.#log, [{ event }]);
    } catch (err) {
      this.#logger.error({ err, type, subscription: subscriptionId }, 'webhook operational event could not be appended to the log');
    }
  }
}

function streakData(streak: FailingStreak): Record<string, unknown> {
  return { failures: streak.failures, failingSince: new Date(streak.sinceMs).toISOString() };
}
