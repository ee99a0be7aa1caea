/**
 * Subscription management, as the `/subscriptions` routes and the service registry use it: create
 * (request checked, service known, URL through the SSRF guard), list and read one principal's own,
 * delete (its queued deliveries go with it, its attempts in flight are aborted), delete every
 * subscription of a removed service, read a subscription's deliveries and retry a finished one.
 *
 * Another principal's subscription is answered as absent (404), never as forbidden, so ids cannot
 * be probed.
 */
import { randomUUID } from 'node:crypto';
import { ProtoError } from '../../errors.ts';
import type { EventLog } from '../../log/EventLog.ts';
import type { Delivery, DeliveryQueue, DeliveryStatus } from './DeliveryQueue.ts';
import type { SsrfGuard } from '../../egress/ssrf-guard.ts';
import type { SubscriptionRequest } from './subscription-request.ts';
import { describeSubscription, type Subscription, type SubscriptionDescriptor, type SubscriptionStore } from './SubscriptionStore.ts';

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
}

/** The subscriptions of every principal. */
export class Subscriptions {
  readonly #o: SubscriptionsOptions;
  /** Creations run one at a time in this process, so two concurrent ones cannot both pass the caps. */
  #creating: Promise<unknown> = Promise.resolve();

  constructor(options: SubscriptionsOptions) {
    this.#o = options;
  }

  /**
   * Creates an active subscription of `principal`; throws `SERVICE_NOT_FOUND`, `WEBHOOK_URL_REJECTED`
   * or `TOO_MANY_SUBSCRIPTIONS` (429, a cap reached).
   */
  create(principal: string, request: SubscriptionRequest): Promise<SubscriptionDescriptor> {
    const created = this.#creating.then(() => this.#create(principal, request));
    this.#creating = created.catch(() => {});
    return created;
  }

  async #create(principal: string, request: SubscriptionRequest): Promise<SubscriptionDescriptor> {
    await this.#checkCaps(principal);
    if (request.serviceId !== undefined && !this.#o.isKnownService(request.serviceId)) {
      throw new ProtoError('SERVICE_NOT_FOUND', `no service "${request.serviceId}"`, { serviceId: request.serviceId });
    }
    await this.#o.guard.check(request.url);
    const subscription: Subscription = {
      id: randomUUID(),
      principal,
      url: request.url,
      status: 'active',
      createdAt: new Date().toISOString(),
      afterPosition: await this.#o.log.head(),
    };
    if (request.serviceId !== undefined) subscription.serviceId = request.serviceId;
    if (request.secret !== undefined) subscription.secret = request.secret;
    if (request.types !== undefined) subscription.types = request.types;
    await this.#o.store.create(subscription);
    return describeSubscription(subscription);
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
    const result = await this.#o.queue.redeliver(id, deliveryId, Date.now());
    if (result.outcome === 'absent') throw new ProtoError('NOT_FOUND', `no delivery "${deliveryId}" of subscription "${id}"`);
    if (result.outcome === 'busy') {
      throw new ProtoError('CONFLICT', `delivery "${deliveryId}" is ${result.delivery.status}; only a dead or succeeded delivery can be retried`, { status: result.delivery.status });
    }
    this.#o.onRedelivered();
    return viewOf(result.delivery);
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
