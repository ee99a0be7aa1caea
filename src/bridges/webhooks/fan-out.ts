/**
 * Fan-out from the event log to the delivery queue: every event appended to the log becomes one
 * queued delivery per active subscription that wants its type (PROTOCOL.md 6.3 rule 5) and was
 * created before it. An operational event of the webhook bridge (`operational-events.ts`) is never
 * delivered to the subscription it is about: that endpoint is the one failing or switched off.
 *
 * The log itself is the buffer: the fan-out reads it by position from a durable checkpoint
 * (`webhooks:fanout` in the log's checkpoints), enqueues a page, then moves the checkpoint. Live
 * appends only wake it up. So events appended while the gateway was down are fanned out at the
 * next start, and a crash between an enqueue and its checkpoint re-enqueues the same message ids,
 * which the queue skips. When the queue holds `maxQueued` unfinished deliveries the fan-out parks
 * (policy when full): it stops reading, keeps its checkpoint, and looks again after `PARK_MS`;
 * nothing is dropped while the log retains the events.
 *
 * Nothing idle costs (issue 29): while no subscription is active the fan-out reads no event; it
 * moves its position to the log's head (read before the subscriptions, so a subscription created
 * meanwhile, whose `afterPosition` is a later head, misses nothing), so retention is not held back
 * and an append costs no write of its own.
 *
 * The checkpoint is saved at most once per `IDLE_SAVE_MS` (issue 28: it was a write transaction of
 * its own per page, 4 % of the gateway's CPU with one subscription), and at close: the position it
 * saves is always one whose deliveries are enqueued already, so after a crash the fan-out enqueues
 * at most that much of the log again, and the queue skips the message ids it holds.
 */
import type { Logger } from 'pino';
import { createHash } from 'node:crypto';
import type { EventLog, StoredEvent } from '../../log/EventLog.ts';
import type { DurableReader } from '../../log/pruner.ts';
import type { DeliveryQueue, NewDelivery } from './DeliveryQueue.ts';
import { deliverable, type SubscriptionAudience } from './audience.ts';
import type { Subscription, SubscriptionStore } from './SubscriptionStore.ts';
import { WEBHOOKS_SOURCE } from './operational-events.ts';

/** The log checkpoint holding the position of the last event fanned out. */
export const FANOUT_CHECKPOINT = 'webhooks:fanout';

/** UUIDv5 namespace of webhook message ids. Never change it: queued ids depend on it. */
export const WEBHOOK_MESSAGE_NAMESPACE = '0b8f4f7e-3a52-4c36-9d1e-8d3f1d0a6c21';

/** Events read from the log per page. */
export const FANOUT_PAGE = 256;

/** How long a parked fan-out waits before looking at the queue again, ms. */
export const PARK_MS = 1000;

/** The checkpoint is saved at most this often (and at close), ms. */
export const IDLE_SAVE_MS = 1000;

/** Settings and collaborators of the fan-out. */
export interface FanOutOptions {
  log: EventLog;
  subscriptions: SubscriptionStore;
  queue: DeliveryQueue;
  /** Unfinished (pending or in-flight) deliveries at most before the fan-out parks. */
  maxQueued: number;
  /** Called after deliveries were enqueued (wakes the dispatcher). */
  onEnqueued: () => void;
  logger: Logger;
  /** The events each subscription may carry (per-caller catalogues); default every event it wants. */
  audience?: SubscriptionAudience;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

/** The namespace's 16 bytes, hashed before each name. */
const MESSAGE_NAMESPACE_BYTES = Buffer.from(WEBHOOK_MESSAGE_NAMESPACE.replaceAll('-', ''), 'hex');

/**
 * The message id (`webhook-id`) of one event to one subscription: the same on every retry and
 * re-enqueue. `msg_` and the UUIDv5 (RFC 9562 section 5.5) of `${subscriptionId}\n${eventId}` in
 * `WEBHOOK_MESSAGE_NAMESPACE`, hashed by node:crypto (the `uuid` package's SHA-1 in JavaScript
 * took a third longer, once per delivery).
 */
export function messageId(subscriptionId: string, eventId: string): string {
  const hash = createHash('sha1').update(MESSAGE_NAMESPACE_BYTES).update(`${subscriptionId}\n${eventId}`).digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.toString('hex', 0, 16);
  return `msg_${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * The fan-out as a durable reader of the log: its saved checkpoint is the position retention must
 * not pass (an event not yet fanned out would otherwise never be delivered). Read from the store, so
 * it holds even while the fan-out is parked or not started.
 */
export function fanOutReader(log: Pick<EventLog, 'checkpoint'>): DurableReader {
  return {
    name: 'webhooks',
    async readPosition() {
      const saved = await log.checkpoint(FANOUT_CHECKPOINT);
      return saved === undefined ? undefined : Number(saved);
    },
  };
}

/** Turns log appends into queued deliveries, from a durable position. */
export class WebhookFanOut {
  readonly #o: FanOutOptions;
  readonly #now: () => number;
  #position = 0;
  #unsubscribe: (() => void) | undefined;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #parkTimer: NodeJS.Timeout | undefined;
  /** The save of the checkpoint that is due, if one is pending. */
  #pendingSave: NodeJS.Timeout | undefined;

  constructor(options: FanOutOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Reads the checkpoint (none yet: starts at the log's head), follows appends, and catches up in the background. */
  async start(): Promise<void> {
    const saved = await this.#o.log.checkpoint(FANOUT_CHECKPOINT);
    this.#position = saved === undefined ? await this.#o.log.head() : Number(saved);
    if (saved === undefined) await this.#save();
    this.#unsubscribe = this.#o.log.subscribe(() => this.wake());
    this.wake();
  }

  /** Reads the log from the checkpoint now. */
  wake(): void {
    if (this.#closed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = this.#run().finally(() => {
      this.#running = undefined;
      // A wake between the run's last look and this point would otherwise be lost.
      if (this.#again) this.wake();
    });
  }

  /** Resolves when the fan-out has caught up with the log as it was when called (tests, shutdown). */
  async settled(): Promise<void> {
    while (this.#running) await this.#running;
  }

  /** Stops following the log; waits for the page in progress. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    clearTimeout(this.#parkTimer);
    await this.#running;
    if (this.#pendingSave) {
      clearTimeout(this.#pendingSave);
      this.#pendingSave = undefined;
      await this.#save().catch((err: unknown) => this.#o.logger.warn({ err }, 'webhook fan-out could not save its position at close'));
    }
  }

  async #run(): Promise<void> {
    try {
      do {
        this.#again = false;
        await this.#drain();
      } while (this.#again && !this.#closed);
    } catch (err) {
      this.#o.logger.error({ err }, 'webhook fan-out failed; retrying');
      this.#park();
    }
  }

  /** Fans out page after page until the log is read or the queue is full. */
  async #drain(): Promise<void> {
    while (!this.#closed) {
      const head = await this.#o.log.head();
      if (head <= this.#position) return;
      const subscriptions = await this.#o.subscriptions.listActive();
      if (subscriptions.length === 0) return this.#passIdle(head);
      const page = await this.#o.log.query({}, this.#position, FANOUT_PAGE);
      if (page.events.length === 0) return;
      if (await this.#queueFull()) {
        this.#park();
        return;
      }
      const deliveries = this.#deliveriesOf(page.events, subscriptions);
      if (deliveries.length > 0) {
        await this.#o.queue.enqueue(deliveries, this.#now());
        this.#o.onEnqueued();
      }
      this.#position = page.events[page.events.length - 1].position;
      this.#saveSoon();
    }
  }

  #deliveriesOf(events: StoredEvent[], subscriptions: Subscription[]): NewDelivery[] {
    const now = this.#now();
    const visible = subscriptions.map((s) => this.#o.audience?.(s));
    return events.flatMap((stored) => {
      const wanting = subscriptions.filter((s, i) => stored.position > s.afterPosition && deliverable(s, stored, visible[i]) && !isAbout(stored, s));
      // One body per event, shared by its deliveries (issue 28: it was serialised once per subscription).
      const payload = wanting.length > 0 ? JSON.stringify(stored.event) : '';
      return wanting.map((s) => ({
        id: messageId(s.id, stored.event.id),
        subscriptionId: s.id,
        eventId: stored.event.id,
        eventType: stored.event.type,
        payload,
        nextAttemptMs: now,
      }));
    });
  }

  async #queueFull(): Promise<boolean> {
    const queued = await this.#o.queue.unfinished();
    const full = queued >= this.#o.maxQueued;
    if (full) this.#o.logger.warn({ queued }, 'webhook queue full: fan-out parked');
    return full;
  }

  /** No subscription: up to `head` without reading the events; the checkpoint follows within `IDLE_SAVE_MS`. */
  #passIdle(head: number): void {
    this.#position = head;
    this.#saveSoon();
  }

  /** Saves the position within `IDLE_SAVE_MS` (the position as it is then), unless a save is pending. */
  #saveSoon(): void {
    if (this.#pendingSave || this.#closed) return;
    this.#pendingSave = setTimeout(() => {
      this.#pendingSave = undefined;
      this.#save().catch((err: unknown) => this.#o.logger.warn({ err }, 'webhook fan-out could not save its position'));
    }, IDLE_SAVE_MS);
    this.#pendingSave.unref();
  }

  #park(): void {
    if (this.#closed) return;
    clearTimeout(this.#parkTimer);
    this.#parkTimer = setTimeout(() => this.wake(), PARK_MS);
    this.#parkTimer.unref();
  }

  #save(): Promise<void> {
    return this.#o.log.saveCheckpoint({ key: FANOUT_CHECKPOINT, value: String(this.#position) });
  }
}

/** True for an operational event of the webhook bridge about `subscription` itself. */
function isAbout(stored: StoredEvent, subscription: Subscription): boolean {
  return stored.event.source === WEBHOOKS_SOURCE && stored.event.correlationid === subscription.id;
}
