/**
 * Subscription management, as the `/subscriptions` routes and the service registry use it: create
 * (request checked, service known, URL through the SSRF guard), list and read one principal's own,
 * delete (its queued deliveries go with it, its attempts in flight are aborted), delete every
 * subscription of a removed service, read a subscription's deliveries and retry a finished one,
 * and the operations of issue 28: enable a disabled subscription, resend one event of the log, and
 * rotate the secret with an overlap. A subscription created without a secret gets a generated
 * `whsec_` one, returned once in the creation's answer.
 *
 * Another principal's subscription is answered as absent (404), never as forbidden, so ids cannot
 * be probed.
 */
import { randomUUID } from 'node:crypto';
import type { AccessRules } from '../../edge/access-rules.ts';
import type { Principal } from '../../edge/credentials.ts';
import { ProtoError } from '../../errors.ts';
import type { EventLog, StoredEvent } from '../../log/EventLog.ts';
import { storedEventOf } from '../../log/history.ts';
import type { Delivery, DeliveryQueue, DeliveryStatus } from './DeliveryQueue.ts';
import { audienceOf, eventStillVisible, grantsOf } from './audience.ts';
import { messageId } from './fan-out.ts';
import type { OperationalEvents } from './operational-events.ts';
import type { SsrfGuard } from '../../egress/ssrf-guard.ts';
import { generateSecret, type RecoveryRequest, type RotationRequest, type SubscriptionRequest } from './subscription-request.ts';
import { describeSubscription, wantsType, type Recovery, type Subscription, type SubscriptionDescriptor, type SubscriptionStore } from './SubscriptionStore.ts';

/** A recovery as `GET /subscriptions/{id}/recoveries/{rid}` shows it. */
export interface RecoveryView {
  id: string;
  subscriptionId: string;
  since: string;
  until: string;
  status: Recovery['status'];
  /** Events sent so far. */
  delivered: number;
  /** Log positions: the last one handled, and the last one the recovery covers (the head when it started). */
  position: number;
  endPosition: number;
  /** The part of the window no longer in the log when it started (retention removed it): nothing of it is recovered. */
  gone?: { since: string; until: string };
  error?: string;
  createdAt: string;
  updatedAt: string;
}

/** The answer to a creation: the descriptor, and the secret when the gateway generated it (shown this once). */
export type CreatedSubscription = SubscriptionDescriptor & { webhook: { url: string; secret?: string } };

/** The answer to a rotation: the new secret when generated (shown this once), and until when the old one still signs. */
export interface RotatedSecret {
  secret?: string;
  previousSecretExpiresAt?: string;
}

/** A delivery as `GET /subscriptions/{id}/deliveries` shows it (no payload, no secret). */
export interface DeliveryView {
  id: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  /** When the next attempt is due (pending deliveries only). */
  nextAttemptAt?: string;
  lastError?: string;
  lastStatus?: number;
  createdAt: string;
  updatedAt: string;
}

/** Collaborators of the subscription manager. */
export interface SubscriptionsOptions {
  store: SubscriptionStore;
  queue: DeliveryQueue;
  guard: SsrfGuard;
  log: EventLog;
  /** True when `serviceId` names a known service (today: a configured backend). */
  isKnownService: (serviceId: string) => boolean;
  /** Called with the id of each deleted subscription (aborts its attempts in flight). */
  onDeleted: (subscriptionId: string) => void;
  /** Called when a delivery is due again (wakes the dispatcher). */
  onRedelivered: () => void;
  /** `webhooks.maxSubscriptionsPerPrincipal` and `webhooks.maxSubscriptions`. */
  limits: { perPrincipal: number; total: number };
  /** Where enabling is told (the log). */
  events: OperationalEvents;
  /** `webhooks.rotationOverlap`, ms: how long a rotated-out secret still signs by default. */
  rotationOverlapMs: number;
  /** Called when a recovery was started (wakes the recovery runner). */
  onRecovery: () => void;
  /**
   * Per-caller catalogues: a subscription keeps what its creator holds, a hidden service is not
   * found, and a resend of an event its creator does not see is answered as for an event not in the log.
   */
  access?: Pick<AccessRules, 'eventsSeenBy' | 'backend' | 'active'>;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

/** The subscriptions of every principal. */
export class Subscriptions {
  #o: SubscriptionsOptions;
  /** Creations run one at a time in this process, so two concurrent ones cannot both pass the caps. */
  #creating: Promise<unknown> = Promise.resolve();

  constructor(options: SubscriptionsOptions) {
    this.#o = options;
  }

  /**
   * Creates an active subscription of `principal`; throws `SERVICE_NOT_FOUND`, `WEBHOOK_URL_REJECTED`
   * or `TOO_MANY_SUBSCRIPTIONS` (429, a cap reached).
   */
  create(principal: Principal, request: SubscriptionRequest): Promise<CreatedSubscription> {
    const created = this.#creating.then(() => this.#create(principal, request));
    this.#creating = created.catch(() => {});
    return created;
  }

  async #create(principal: Principal, request: SubscriptionRequest): Promise<CreatedSubscription> {
    await this.#checkCaps(principal.id);
    const visible = (serviceId: string) => this.#o.access?.backend(principal, serviceId) ?? true;
    if (request.serviceId !== undefined && !(this.#o.isKnownService(request.serviceId) && visible(request.serviceId))) {
      throw new ProtoError('SERVICE_NOT_FOUND', `no service "${request.serviceId}"`, { serviceId: request.serviceId });
    }
    await this.#o.guard.check(request.url);
    const subscription: Subscription = {
      id: randomUUID(),
      principal: principal.id,
      url: request.url,
      status: 'active',
      createdAt: new Date().toISOString(),
      afterPosition: await this.#o.log.head(),
    };
    if (request.serviceId !== undefined) subscription.serviceId = request.serviceId;
    subscription.secret = request.secret ?? generateSecret();
    if (request.rateLimit !== undefined) subscription.rateLimit = request.rateLimit;
    if (request.types !== undefined) subscription.types = request.types;
    subscription.grants = grantsOf(principal);
    await this.#o.store.create(subscription);
    const created: CreatedSubscription = describeSubscription(subscription);
    if (request.secret === undefined) created.webhook = { ...created.webhook, secret: subscription.secret };
    return created;
  }

  /** New subscription caps (a configuration reload): existing subscriptions stay; new ones are checked against these. */
  reconfigure(limits: SubscriptionsOptions['limits']): void {
    this.#o = { ...this.#o, limits };
  }

  async #checkCaps(principal: string): Promise<void> {
    const { perPrincipal, total } = this.#o.limits;
    if ((await this.#o.store.listByPrincipal(principal)).length >= perPrincipal) {
      throw new ProtoError('TOO_MANY_SUBSCRIPTIONS', `at most ${perPrincipal} subscriptions per caller; delete one first`, { limit: 'maxSubscriptionsPerPrincipal', max: perPrincipal });
    }
    if ((await this.#o.store.listActive()).length >= total) {
      throw new ProtoError('TOO_MANY_SUBSCRIPTIONS', `the gateway holds at most ${total} subscriptions`, { limit: 'maxSubscriptions', max: total });
    }
  }

  /** The descriptors of `principal`'s subscriptions, oldest first. */
  async list(principal: string): Promise<SubscriptionDescriptor[]> {
    return (await this.#o.store.listByPrincipal(principal)).map(describeSubscription);
  }

  /** The descriptor of one of `principal`'s subscriptions; `NOT_FOUND` otherwise. */
  async get(principal: string, id: string): Promise<SubscriptionDescriptor> {
    return describeSubscription(await this.#own(principal, id));
  }

  /** Deletes one of `principal`'s subscriptions and every delivery queued for it; `NOT_FOUND` otherwise. */
  async delete(principal: string, id: string): Promise<void> {
    await this.#own(principal, id);
    await this.#remove(id);
  }

  /** Deletes every subscription linked to `serviceId` (the service was removed); returns their ids. */
  async deleteByService(serviceId: string): Promise<string[]> {
    const ids = await this.#o.store.deleteByService(serviceId);
    for (const id of ids) await this.#removeDeliveries(id);
    return ids;
  }

  /** A page of the deliveries of one of `principal`'s subscriptions, optionally of one status. */
  async deliveries(
    principal: string,
    id: string,
    options: { status?: DeliveryStatus; after: number; limit: number },
  ): Promise<{ deliveries: DeliveryView[]; next?: number }> {
    await this.#own(principal, id);
    const page = await this.#o.queue.list(id, options);
    return { deliveries: page.deliveries.map(viewOf), ...(page.next === undefined ? {} : { next: page.next }) };
  }

  /**
   * Puts a dead or succeeded delivery of one of `principal`'s subscriptions back in the queue, due
   * now with a fresh retry schedule; `NOT_FOUND` for an unknown subscription or delivery, `CONFLICT`
   * for one still pending or in flight, or a subscription that is not active.
   */
  async redeliver(principal: string, id: string, deliveryId: string): Promise<DeliveryView> {
    const subscription = await this.#own(principal, id);
    if (subscription.status !== 'active') {
      throw new ProtoError('CONFLICT', `subscription "${id}" is ${subscription.status}; only an active subscription's deliveries can be retried`);
    }
    // An event its creator no longer sees (a reload hid its backend) is answered as a delivery that is not there.
    const delivery = await this.#o.queue.get(id, deliveryId);
    if (delivery && !(await eventStillVisible(audienceOf(this.#o.access), this.#o.log)(subscription, delivery.eventId))) throw absentDelivery(id, deliveryId);
    const result = await this.#o.queue.redeliver(id, deliveryId, Date.now());
    if (result.outcome === 'absent') throw absentDelivery(id, deliveryId);
    if (result.outcome === 'busy') {
      throw new ProtoError('CONFLICT', `delivery "${deliveryId}" is ${result.delivery.status}; only a dead or succeeded delivery can be retried`, { status: result.delivery.status });
    }
    this.#o.onRedelivered();
    return viewOf(result.delivery);
  }

  /**
   * Enables one of `principal`'s subscriptions (disabled after a `410 Gone` or a failing streak):
   * deliveries of events appended from now on resume, its failing streak starts over, and
   * `SubscriptionEnabledV1` is told. An active subscription is left as it is. `NOT_FOUND` otherwise.
   */
  async enable(principal: string, id: string, options: { recover: boolean } = { recover: false }): Promise<SubscriptionDescriptor & { recovery?: RecoveryView }> {
    const before = await this.#own(principal, id);
    const now = this.#now();
    const enabled = await this.#o.store.setStatus(id, 'active', { atMs: now });
    if (enabled) await this.#o.events.enabled(id, now);
    const descriptor: SubscriptionDescriptor & { recovery?: RecoveryView } = describeSubscription(await this.#own(principal, id));
    if (options.recover && enabled && before.disabled !== undefined) {
      descriptor.recovery = await this.recover(principal, id, { sinceMs: before.disabled.atMs, untilMs: now });
    }
    return descriptor;
  }

  /**
   * Starts a recovery of one of `principal`'s subscriptions: every event of the log whose `time` is
   * in the window and that the subscription takes is sent again, in log order, on the recovery lane
   * (`recovery-runner.ts`). `CONFLICT` when the subscription is not active or has a recovery running
   * (`details.recoveryId`). A window partly removed by retention recovers what is left; `gone` says
   * which part was no longer there.
   */
  async recover(principal: string, id: string, request: RecoveryRequest): Promise<RecoveryView> {
    const subscription = await this.#own(principal, id);
    if (subscription.status !== 'active') {
      throw new ProtoError('CONFLICT', `subscription "${id}" is ${subscription.status}; enable it first (POST /subscriptions/${id}/enable with {"recover": true})`);
    }
    const now = this.#now();
    const recovery: Recovery = {
      id: randomUUID(),
      subscriptionId: id,
      sinceMs: request.sinceMs,
      untilMs: request.untilMs ?? now,
      endPosition: await this.#o.log.head(),
      position: 0,
      status: 'running',
      delivered: 0,
      createdMs: now,
      updatedMs: now,
    };
    const goneUntilMs = await this.#goneUntil(recovery.sinceMs);
    if (goneUntilMs !== undefined) recovery.goneUntilMs = Math.min(goneUntilMs, recovery.untilMs);
    const running = await this.#o.store.startRecovery(recovery);
    if (running !== undefined) {
      throw new ProtoError('CONFLICT', `subscription "${id}" has a recovery running (${running}); one at a time`, { recoveryId: running });
    }
    this.#o.onRecovery();
    return recoveryView(recovery);
  }

  /** A recovery of one of `principal`'s subscriptions; `NOT_FOUND` otherwise. */
  async recovery(principal: string, id: string, recoveryId: string): Promise<RecoveryView> {
    await this.#own(principal, id);
    const recovery = await this.#o.store.getRecovery(recoveryId);
    if (!recovery || recovery.subscriptionId !== id) throw new ProtoError('NOT_FOUND', `no recovery "${recoveryId}" of subscription "${id}"`);
    return recoveryView(recovery);
  }

  /**
   * When retention has removed events (the log's first position is past 1) and its oldest event is
   * later than `sinceMs`: that event's time, the end of the part of the window that is gone.
   */
  async #goneUntil(sinceMs: number): Promise<number | undefined> {
    const oldest = (await this.#o.log.query({}, 0, 1)).events[0];
    if (!oldest || oldest.position <= 1) return undefined;
    const oldestMs = Date.parse(oldest.event.time);
    return oldestMs > sinceMs ? oldestMs : undefined;
  }

  /**
   * Queues one event of the log again for one of `principal`'s subscriptions, due now, under the
   * same `webhook-id` as every other delivery of that event to that subscription (receivers
   * de-duplicate on it). `NOT_FOUND` for an unknown subscription or an event not (or no longer) in
   * the log; `CONFLICT` for a subscription that is not active or does not want the event's type. A
   * delivery of it still pending or in flight is answered as it is.
   */
  async resend(principal: string, id: string, eventId: string): Promise<DeliveryView> {
    const subscription = await this.#own(principal, id);
    if (subscription.status !== 'active') {
      throw new ProtoError('CONFLICT', `subscription "${id}" is ${subscription.status}; enable it first (POST /subscriptions/${id}/enable)`);
    }
    const stored = await this.#event(eventId);
    const visible = audienceOf(this.#o.access)(subscription);
    if (visible !== undefined && !visible(stored.backend, stored.event.type)) throw absentEvent(eventId);
    if (!wantsType(subscription, stored.event.type)) {
      throw new ProtoError('CONFLICT', `subscription "${id}" does not take events of type ${stored.event.type} (its filter.types)`, { type: stored.event.type });
    }
    const deliveryId = messageId(id, eventId);
    const now = this.#now();
    let result = await this.#o.queue.redeliver(id, deliveryId, now);
    if (result.outcome === 'absent') {
      await this.#o.queue.enqueue([{ id: deliveryId, subscriptionId: id, eventId, eventType: stored.event.type, payload: JSON.stringify(stored.event), nextAttemptMs: now }], now);
      result = await this.#o.queue.redeliver(id, deliveryId, now);
    }
    this.#o.onRedelivered();
    if (result.outcome === 'absent') throw new ProtoError('CONFLICT', `delivery "${deliveryId}" was removed meanwhile; try again`);
    return viewOf(result.delivery);
  }

  /**
   * Rotates the secret of one of `principal`'s subscriptions: `request.secret` (or a generated one)
   * signs from now on; the old one signs beside it for the overlap (`request.overlapMs`, default
   * `webhooks.rotationOverlap`), then is deleted from the store. `NOT_FOUND` otherwise.
   */
  async rotateSecret(principal: string, id: string, request: RotationRequest): Promise<RotatedSecret> {
    const subscription = await this.#own(principal, id);
    const secret = request.secret ?? generateSecret();
    const untilMs = this.#now() + (request.overlapMs ?? this.#o.rotationOverlapMs);
    if (!(await this.#o.store.rotateSecret(id, secret, untilMs))) throw new ProtoError('NOT_FOUND', `no subscription "${id}"`);
    const rotated: RotatedSecret = {};
    if (request.secret === undefined) rotated.secret = secret;
    if (subscription.secret !== undefined) rotated.previousSecretExpiresAt = new Date(untilMs).toISOString();
    return rotated;
  }

  /** The event `eventId` of the log; `NOT_FOUND` when it is not (or no longer) there. */
  async #event(eventId: string): Promise<StoredEvent> {
    const found = await storedEventOf(this.#o.log, eventId);
    if (!found) throw absentEvent(eventId);
    return found;
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  async #own(principal: string, id: string): Promise<Subscription> {
    const subscription = await this.#o.store.get(id);
    if (!subscription || subscription.principal !== principal) throw new ProtoError('NOT_FOUND', `no subscription "${id}"`);
    return subscription;
  }

  async #remove(id: string): Promise<void> {
    // The subscription goes first, so the fan-out stops enqueueing for it; a delivery enqueued in
    // between finds no subscription at its attempt and is dropped then.
    await this.#o.store.delete(id);
    await this.#removeDeliveries(id);
  }

  async #removeDeliveries(id: string): Promise<void> {
    await this.#o.queue.deleteSubscription(id);
    this.#o.onDeleted(id);
  }
}

function recoveryView(r: Recovery): RecoveryView {
  const view: RecoveryView = {
    id: r.id,
    subscriptionId: r.subscriptionId,
    since: new Date(r.sinceMs).toISOString(),
    until: new Date(r.untilMs).toISOString(),
    status: r.status,
    delivered: r.delivered,
    position: r.position,
    endPosition: r.endPosition,
    createdAt: new Date(r.createdMs).toISOString(),
    updatedAt: new Date(r.updatedMs).toISOString(),
  };
  if (r.goneUntilMs !== undefined) view.gone = { since: view.since, until: new Date(r.goneUntilMs).toISOString() };
  if (r.error !== undefined) view.error = r.error;
  return view;
}

function viewOf(d: Delivery): DeliveryView {
  const view: DeliveryView = {
    id: d.id,
    eventId: d.eventId,
    eventType: d.eventType,
    status: d.status,
    attempts: d.attempts,
    createdAt: new Date(d.createdMs).toISOString(),
    updatedAt: new Date(d.updatedMs).toISOString(),
  };
  if (d.status === 'pending') view.nextAttemptAt = new Date(d.nextAttemptMs).toISOString();
  if (d.lastError !== undefined) view.lastError = d.lastError;
  if (d.lastStatus !== undefined) view.lastStatus = d.lastStatus;
  return view;
}

/** A delivery the subscription does not have, as far as the caller may know (never queued, purged, or of an event hidden from it since). */
function absentDelivery(subscriptionId: string, deliveryId: string): ProtoError {
  return new ProtoError('NOT_FOUND', `no delivery "${deliveryId}" of subscription "${subscriptionId}"`);
}

/** An event not in the log, as far as the caller may know (never appended, removed by retention, or hidden from it). */
function absentEvent(eventId: string): ProtoError {
  return new ProtoError('NOT_FOUND', `no event "${eventId}" in the log (never appended, or removed by retention)`);
}
