/**
 * The subscription store port: webhook subscriptions (PROTOCOL.md 2.7) kept durably, with the
 * principal that created them. Implemented by `memory-subscription-store.ts` and
 * `sqlite-subscription-store.ts` and `redis-subscription-store.ts`; all pass the contract suite in
 * `test/bridges/webhooks/subscription-store-contract.ts`.
 */

/** `active` receives deliveries; `disabled` (after a `410 Gone`, a long failing streak, or on request) receives none. */
export type SubscriptionStatus = 'active' | 'disabled';

/** Why a subscription was disabled: the receiver answered `410 Gone`, or it kept failing for `webhooks.disableAfter`. */
export type DisabledReason = 'gone' | 'failing';

/** A failing streak of a subscription: its consecutive failed attempts and when the first of them ended, epoch ms. */
export interface FailingStreak {
  failures: number;
  sinceMs: number;
}

/** A secret replaced by a rotation that still signs until `untilMs` (epoch ms), beside the new one. */
export interface PreviousSecret {
  secret: string;
  untilMs: number;
}

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
  /** While disabled: when (epoch ms) and why. */
  disabled?: { atMs: number; reason: DisabledReason };
  /** The current failing streak, if the last attempt failed. */
  failing?: FailingStreak;
  /** The secret a rotation replaced, while its overlap lasts (write-only, as `secret`). */
  previousSecret?: PreviousSecret;
  /** Attempts a second at most to this endpoint; undefined = `webhooks.rateLimit.perSecond`. */
  rateLimit?: { perSecond: number };
  /**
   * The scopes and scope-claim values its creator held when it was created (`audience.ts`): its
   * deliveries carry only the events those see. Undefined (made before they were kept): every event.
   */
  grants?: string[];
}

/** The descriptor of a subscription in answers: the request without `secret`, plus id, status, time. */
export interface SubscriptionDescriptor {
  id: string;
  serviceId?: string;
  webhook: { url: string; rateLimit?: { perSecond: number } };
  filter?: { types: string[] };
  status: SubscriptionStatus;
  createdAt: string;
  /** While disabled: when and why. */
  disabledAt?: string;
  disabledReason?: DisabledReason;
  /** The current failing streak: consecutive failed attempts, and since when. */
  failing?: { failures: number; since: string };
  /** Until when the secret a rotation replaced still signs, beside the new one. */
  previousSecretExpiresAt?: string;
}

/** The state of a recovery: it runs until the window is read, or it fails or is cancelled (its subscription went away). */
export type RecoveryStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/**
 * A recovery of a time range of the log for one subscription (`POST /subscriptions/{id}/recover`):
 * the events of the window that the subscription takes, re-sent in log order on a lane of their
 * own, from a durable position, by whichever replica holds its lease.
 */
export interface Recovery {
  id: string;
  subscriptionId: string;
  /** The window on the events' `time`, epoch ms, both ends included. */
  sinceMs: number;
  untilMs: number;
  /** The log's head when it started: later events are delivered live, not recovered. */
  endPosition: number;
  /** The position of the last event handled (sent, or skipped by the filter). */
  position: number;
  status: RecoveryStatus;
  /** Events sent so far. */
  delivered: number;
  /** When the part of the window before this instant (epoch ms) was no longer in the log at the start (retention). */
  goneUntilMs?: number;
  /** Why it failed. */
  error?: string;
  createdMs: number;
  updatedMs: number;
}

/** How `setStatus` records a change: when, and for `disabled`, why. */
export interface StatusChange {
  atMs: number;
  reason?: DisabledReason;
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
  /**
   * Sets the status, atomically against other writers: true only when it changed (the subscription
   * exists and had the other status), so of two replicas disabling one subscription only one is
   * told it did. `disabled` records `change` (when, why); `active` clears it and the failing streak.
   */
  setStatus(id: string, status: SubscriptionStatus, change: StatusChange): Promise<boolean>;
  /**
   * Records the result of one attempt in the subscription's failing streak, atomically (replicas
   * share it): a failure extends the streak (or starts it at `nowMs`) and returns it; a success
   * ends it and returns the streak it ended, or undefined when there was none. Undefined as well
   * for an unknown subscription.
   */
  recordAttempt(id: string, succeeded: boolean, nowMs: number): Promise<FailingStreak | undefined>;
  /**
   * Replaces the secret: the current one (if any) becomes `previousSecret` until `previousUntilMs`
   * (a former previous secret is dropped). False when there is no such subscription.
   */
  rotateSecret(id: string, secret: string, previousUntilMs: number): Promise<boolean>;
  /** Deletes every previous secret whose overlap ended by `nowMs`; returns how many. */
  dropExpiredSecrets(nowMs: number): Promise<number>;
  /**
   * Stores a new `running` recovery unless its subscription has one running already: returns
   * undefined when stored, else the id of the running one (one recovery per subscription at a time).
   */
  startRecovery(recovery: Recovery): Promise<string | undefined>;
  /** The recovery with this id, or undefined. */
  getRecovery(id: string): Promise<Recovery | undefined>;
  /**
   * Leased claim of one running recovery whose lease is free or ended at `nowMs`: leased to `owner`
   * until `nowMs + leaseMs`; of two concurrent claimers, never both get one. Undefined when none.
   */
  claimRecovery(owner: string, nowMs: number, leaseMs: number): Promise<Recovery | undefined>;
  /**
   * Writes a recovery's progress while `owner` holds its lease (renewed until `nowMs + leaseMs`); a
   * recovery that is no longer `running` gives up its lease and its subscription's slot, and so
   * does `release`. False, with nothing written, when `owner` no longer holds the lease.
   */
  saveRecovery(recovery: Recovery, owner: string, nowMs: number, leaseMs: number, release?: boolean): Promise<boolean>;
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
  if (subscription.rateLimit !== undefined) descriptor.webhook.rateLimit = { ...subscription.rateLimit };
  if (subscription.types !== undefined) descriptor.filter = { types: [...subscription.types] };
  if (subscription.disabled !== undefined && subscription.status === 'disabled') {
    descriptor.disabledAt = new Date(subscription.disabled.atMs).toISOString();
    descriptor.disabledReason = subscription.disabled.reason;
  }
  if (subscription.failing !== undefined) descriptor.failing = { failures: subscription.failing.failures, since: new Date(subscription.failing.sinceMs).toISOString() };
  if (subscription.previousSecret !== undefined) descriptor.previousSecretExpiresAt = new Date(subscription.previousSecret.untilMs).toISOString();
  return descriptor;
}

/** The secrets a delivery is signed with: the current one, then the previous one while its overlap lasts at `nowMs`. */
export function signingSecrets(subscription: Subscription, nowMs: number): string[] {
  const secrets = subscription.secret === undefined ? [] : [subscription.secret];
  const previous = subscription.previousSecret;
  if (previous !== undefined && previous.untilMs > nowMs) secrets.push(previous.secret);
  return secrets;
}

/** True when `subscription` wants events of `type` (PROTOCOL.md 6.3 rule 5). */
export function wantsType(subscription: Subscription, type: string): boolean {
  return subscription.types === undefined || subscription.types.includes(type);
}
