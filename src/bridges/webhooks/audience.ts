/**
 * Per-caller catalogues for webhooks: a subscription's deliveries carry only the events its creator
 * saw when it created it. The scopes and scope-claim values the creator held then are kept with the
 * subscription (`grants`), so a subscription keeps its creator's view after the key or token that
 * made it is gone. A subscription created before grants were kept has none and takes every event
 * its filter wants, as it did.
 */
import { NOBODY, type AccessRules, type EventVisibility } from '../../edge/access-rules.ts';
import type { Principal } from '../../edge/credentials.ts';
import type { Scope } from '../../config/types.ts';
import type { EventLog, StoredEvent } from '../../log/EventLog.ts';
import { storedEventOf } from '../../log/history.ts';
import { wantsType, type Subscription } from './SubscriptionStore.ts';

/** The events one subscription may carry; undefined: every event its filter wants. */
export type SubscriptionAudience = (subscription: Subscription) => EventVisibility | undefined;

/** What a creator holds, as a subscription keeps it: its scopes and its token's scope-claim values, sorted, once each. */
export function grantsOf(principal: Principal): string[] {
  return [...new Set<string>([...principal.scopes, ...(principal.grants ?? [])])].sort();
}

/** The audience of subscriptions under `access` (none: every subscription takes every event it wants). */
export function audienceOf(access: Pick<AccessRules, 'eventsSeenBy' | 'active'> | undefined): SubscriptionAudience {
  if (access === undefined) return () => undefined;
  // Asked per page of the fan-out, so rules a reload adds or removes apply from the next page.
  return (subscription) => {
    if (subscription.grants === undefined || !access.active) return undefined;
    const held = new Set(subscription.grants);
    return access.eventsSeenBy({ id: subscription.principal, scopes: held as Set<Scope>, grants: held });
  };
}

/** Whether a subscription takes `stored`: its filter wants the type and its creator saw the event (`visible`). */
export function deliverable(subscription: Subscription, stored: StoredEvent, visible: EventVisibility | undefined): boolean {
  return wantsType(subscription, stored.event.type) && (visible === undefined || visible(stored.backend, stored.event.type));
}

/** Whether one queued event may still go to a subscription (`eventStillVisible`). */
export type StillVisible = (subscription: Subscription, eventId: string) => Promise<boolean>;

/**
 * Whether the event `eventId`, queued for `subscription` when its creator saw it, is still one the
 * creator sees under the rules as they are now: a reload may have hidden its backend since (a
 * retry, a redelivery). The log is read only for a subscription that has an audience; an event the
 * log no longer holds (retention) is let through as it was queued.
 */
export function eventStillVisible(audience: SubscriptionAudience, log: Pick<EventLog, 'positionOf' | 'query'>): StillVisible {
  return async (subscription, eventId) => {
    const visible = audience(subscription);
    if (visible === undefined) return true;
    const stored = await storedEventOf(log, eventId);
    return stored === undefined || visible(stored.backend, stored.event.type);
  };
}

/**
 * Whether every caller sees the event `eventId` (no `access` rule hides its backend or its type):
 * what an operational event, which every caller reads, may name of it. Without rules, true without
 * reading the log; an event the log no longer holds is not named.
 */
export function eventSeenByEveryone(access: Pick<AccessRules, 'eventsSeenBy' | 'active'> | undefined, log: Pick<EventLog, 'positionOf' | 'query'>): (eventId: string) => Promise<boolean> {
  return async (eventId) => {
    if (access === undefined || !access.active) return true;
    const stored = await storedEventOf(log, eventId);
    return stored !== undefined && access.eventsSeenBy(NOBODY)(stored.backend, stored.event.type);
  };
}
