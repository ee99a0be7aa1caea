/**
 * The subscription store port: webhook subscriptions (PROTOCOL.md 2.7) kept durably, with the
 * principal that created them. Implemented by `memory-subscription-store.ts` and
 * `sqlite-subscription-store.ts`; both pass the contract suite in
 * `test/bridges/webhooks/subscription-store-contract.ts`.
 */

/** `active` receives deliveries; `disabled` (after a `410 Gone`) receives none. */
export type SubscriptionStatus = 'active' | 'disabled';

/** A stored subscription. `secret` never leaves the gateway (see `describeSubscription`). */
export interface Subscription {
  id: string;
  /** Id of the principal that created it: only that principal sees it. */
  principal: string;
  /** The service whose removal deletes this subscription; it does not filter. */
  serviceId?: string;
  url: string;
  /** HMAC signing secret (write-only). */
  secret?: string;
  /** Event types delivered; undefined = every type. */
  types?: string[];
  status: SubscriptionStatus;
  /** ISO 8601 creation time. */
  createdAt: string;
  /** The log's head position at creation: only events after it are delivered. */
  afterPosition: number;
}

/** The descriptor of a subscription in answers: the request without `secret`, plus id, status, time. */
export interface SubscriptionDescriptor {
  id: string;
  serviceId?: string;
  webhook: { url: string };
  filter?: { types: string[] };
  status: SubscriptionStatus;
  createdAt: string;
}

export interface SubscriptionStore {
  /** Opens the store (creates tables). Idempotent. */
  open(): Promise<void>;
  /** Stores a new subscription; its `id` must be new. */
  create(subscription: Subscription): Promise<void>;
  /** The subscription with this id, or undefined. */
  get(id: string): Promise<Subscription | undefined>;
  /** The subscriptions of one principal, oldest first. */
  listByPrincipal(principal: string): Promise<Subscription[]>;
  /** Every `active` subscription (fan-out). */
  listActive(): Promise<Subscription[]>;
  /** Sets the status; returns false when there is no such subscription. */
  setStatus(id: string, status: SubscriptionStatus): Promise<boolean>;
  /** Deletes one; returns false when there was none. */
  delete(id: string): Promise<boolean>;
  /** Deletes every subscription linked to `serviceId`; returns their ids. */
  deleteByService(serviceId: string): Promise<string[]>;
  /** Closes the store. Safe to call twice. */
  close(): Promise<void>;
}

/** The public descriptor of a subscription: never its secret or principal. */
export function describeSubscription(subscription: Subscription): SubscriptionDescriptor {
  const descriptor: SubscriptionDescriptor = { id: subscription.id, webhook: { url: subscription.url }, status: subscription.status, createdAt: subscription.createdAt };
  if (subscription.serviceId !== undefined) descriptor.serviceId = subscription.serviceId;
  if (subscription.types !== undefined) descriptor.filter = { types: [...subscription.types] };
  return descriptor;
}

/** True when `subscription` wants events of `type` (PROTOCOL.md 6.3 rule 5). */
export function wantsType(subscription: Subscription, type: string): boolean {
  return subscription.types === undefined || subscription.types.includes(type);
}
