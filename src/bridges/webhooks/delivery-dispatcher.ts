/**
 * The delivery dispatcher: takes due deliveries from the queue and attempts them, at most
 * `webhooks.concurrency` at once overall and `PER_SUBSCRIPTION` per subscription, so one slow
 * receiver holds at most its own slots and never the others'. Each attempt is signed afresh (a new
 * `webhook-timestamp`) under the delivery's stable `webhook-id`, and its verdict (`retry-policy.ts`)
 * is written to the queue before the slot is freed.
 *
 * Wake-ups: an enqueue (`wake()`), the end of an attempt, and one timer at the earliest due retry.
 * `close()` stops taking deliveries, aborts the attempts in flight and puts them back to `pending`
 * without counting them (at-least-once: a receiver may see such a message again).
 */
import type { Logger } from 'pino';
import type { WebhookMetrics } from '../../metrics/webhooks.ts';
import type { Delivery, DeliveryQueue } from './DeliveryQueue.ts';
import type { DeliveryResponse } from './delivery-client.ts';
import { judgeAttempt, type AttemptVerdict } from './retry-policy.ts';
import { webhookHeaders } from './signer.ts';
import type { Subscription, SubscriptionStore } from './SubscriptionStore.ts';

/** Attempts in flight per subscription at most. */
export const PER_SUBSCRIPTION = 4;

/** Delay of the next look at the queue after a failure to read it, ms. */
const QUEUE_ERROR_BACKOFF_MS = 1000;

/** Longest timer Node accepts (about 24.8 days); a later retry is looked at again then. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What the dispatcher posts with (the `DeliveryClient`, or a stand-in in tests and benchmarks). */
export interface DeliveryPoster {
  post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<DeliveryResponse>;
}

/** Settings and collaborators of the dispatcher. */
export interface DispatcherOptions {
  queue: DeliveryQueue;
  subscriptions: SubscriptionStore;
  client: DeliveryPoster;
  /** `webhooks.retry.schedule` in ms: N entries = N retries. */
  scheduleMs: number[];
  /** Attempts in flight overall (`webhooks.concurrency`). */
  concurrency: number;
  metrics: WebhookMetrics;
  logger: Logger;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

interface Attempt {
  subscriptionId: string;
  controller: AbortController;
  done: Promise<void>;
}

/** Runs delivery attempts from the queue within the concurrency limits. */
export class DeliveryDispatcher {
  readonly #o: DispatcherOptions;
  readonly #now: () => number;
  readonly #inFlight = new Map<string, Attempt>();
  readonly #perSubscription = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #pump: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #closing: Promise<void> | undefined;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Puts deliveries interrupted by a previous stop back to `pending`, then starts dispatching. */
  async start(): Promise<void> {
    const requeued = await this.#o.queue.requeueInFlight(this.#now());
    if (requeued > 0) this.#o.metrics.claims.inc({ outcome: 'requeued' }, requeued);
    if (requeued > 0) this.#o.logger.info({ requeued }, 'webhook deliveries interrupted by the last stop are due again');
    this.wake();
  }

  /** Looks at the queue now (after an enqueue). */
  wake(): void {
    if (this.#closed) return;
    if (this.#pump) {
      this.#again = true;
      return;
    }
    this.#pump = this.#run().finally(() => {
      this.#pump = undefined;
    });
  }

  /** Aborts the attempts in flight to a subscription (it was deleted). */
  abortSubscription(subscriptionId: string): void {
    for (const attempt of this.#inFlight.values()) if (attempt.subscriptionId === subscriptionId) attempt.controller.abort();
  }

  /** Number of attempts in flight. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Stops dispatching; aborted attempts go back to `pending`. Resolves when every write is done. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#pump;
    for (const attempt of this.#inFlight.values()) attempt.controller.abort();
    await Promise.allSettled([...this.#inFlight.values()].map((a) => a.done));
  }

  async #run(): Promise<void> {
    try {
      do {
        this.#again = false;
        await this.#fill();
      } while (this.#again && !this.#closed);
      await this.#armTimer();
    } catch (err) {
      this.#o.logger.error({ err }, 'webhook queue could not be read; retrying');
      this.#setTimer(QUEUE_ERROR_BACKOFF_MS);
    }
  }

  /** Starts due deliveries until the global limit is reached or none can start. */
  async #fill(): Promise<void> {
    while (!this.#closed) {
      const free = this.#o.concurrency - this.#inFlight.size;
      if (free <= 0) return;
      const due = await this.#o.queue.due(this.#now(), free, this.#saturated());
      let started = 0;
      for (const candidate of due) {
        if (this.#closed || this.#inFlight.size >= this.#o.concurrency) return;
        if (this.#count(candidate.subscriptionId) >= PER_SUBSCRIPTION) continue;
        const delivery = await this.#o.queue.begin(candidate.id, this.#now());
        this.#o.metrics.claims.inc({ outcome: delivery ? 'claimed' : 'taken' });
        if (delivery) {
          this.#launch(delivery);
          started += 1;
        }
      }
      // Fewer rows than asked: nothing else is due. None started: only saturated ones were due.
      if (due.length < free || started === 0) return;
    }
  }

  /** Registers an attempt as in flight and runs it; its end frees the slots and wakes the pump. */
  #launch(delivery: Delivery): void {
    const controller = new AbortController();
    this.#perSubscription.set(delivery.subscriptionId, this.#count(delivery.subscriptionId) + 1);
    const done = this.#attempt(delivery, controller.signal)
      .catch((err: unknown) => this.#o.logger.error({ err, delivery: delivery.id }, 'webhook attempt could not be recorded'))
      .finally(() => {
        this.#inFlight.delete(delivery.id);
        const left = this.#count(delivery.subscriptionId) - 1;
        if (left > 0) this.#perSubscription.set(delivery.subscriptionId, left);
        else this.#perSubscription.delete(delivery.subscriptionId);
        this.wake();
      });
    this.#inFlight.set(delivery.id, { subscriptionId: delivery.subscriptionId, controller, done });
  }

  async #attempt(delivery: Delivery, signal: AbortSignal): Promise<void> {
    const { queue, subscriptions } = this.#o;
    const subscription = await subscriptions.get(delivery.subscriptionId);
    if (!subscription) {
      // Deleted while this delivery was queued (or its deletion was cut short): nothing is delivered.
      await queue.deleteSubscription(delivery.subscriptionId);
      return;
    }
    if (subscription.status !== 'active' || signal.aborted) {
      await queue.finish(delivery.id, { status: subscription.status === 'active' ? 'pending' : 'dead', uncount: true }, this.#now());
      return;
    }
    const started = this.#now();
    const result = await this.#post(subscription, delivery, signal);
    if (signal.aborted) {
      await queue.finish(delivery.id, { status: 'pending', nextAttemptMs: this.#now(), uncount: true }, this.#now());
      return;
    }
    this.#o.metrics.latency.observe((this.#now() - started) / 1000);
    this.#o.metrics.attempts.inc({ result: attemptResult(result) });
    const verdict = judgeAttempt(result, delivery.attempts, this.#o.scheduleMs, this.#now());
    await queue.finish(delivery.id, verdict.outcome, this.#now());
    await this.#settle(subscription, verdict);
  }

  #post(subscription: Subscription, delivery: Delivery, signal: AbortSignal): Promise<DeliveryResponse> {
    const headers = webhookHeaders(delivery.id, Math.floor(this.#now() / 1000), delivery.payload, subscription.secret);
    return this.#o.client.post(subscription.url, headers, delivery.payload, signal);
  }

  /** Counts the end of a delivery; a `410 Gone` disables the subscription and drops its pending deliveries. */
  async #settle(subscription: Subscription, verdict: AttemptVerdict): Promise<void> {
    const { metrics } = this.#o;
    if (verdict.kind === 'gone') {
      metrics.deliveries.inc({ outcome: 'gone' });
      await this.#o.subscriptions.setStatus(subscription.id, 'disabled');
      const dropped = await this.#o.queue.cancelPending(subscription.id);
      this.#o.logger.warn({ subscription: subscription.id, dropped }, 'webhook receiver answered 410 Gone: subscription disabled');
    } else if (verdict.outcome.status === 'succeeded') {
      metrics.deliveries.inc({ outcome: 'succeeded' });
    } else if (verdict.outcome.status === 'dead') {
      metrics.deliveries.inc({ outcome: 'dead' });
      metrics.deadLetters.inc();
    }
  }

  /** After a pass: a timer at the earliest pending retry (attempt ends wake the pump by themselves). */
  async #armTimer(): Promise<void> {
    if (this.#closed) return;
    const next = await this.#o.queue.nextDueMs();
    if (next === undefined) return;
    const delay = next - this.#now();
    // Due but not started: every such delivery waits for a slot, and a slot's release wakes the pump.
    if (delay <= 0 && this.#inFlight.size > 0) return;
    this.#setTimer(Math.max(delay, 10));
  }

  #setTimer(delayMs: number): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.wake(), Math.min(delayMs, MAX_TIMER_MS));
    this.#timer.unref();
  }

  #saturated(): string[] {
    return [...this.#perSubscription].filter(([, n]) => n >= PER_SUBSCRIPTION).map(([id]) => id);
  }

  #count(subscriptionId: string): number {
    return this.#perSubscription.get(subscriptionId) ?? 0;
  }
}

/** The `result` label of an attempt. */
function attemptResult(result: DeliveryResponse): string {
  if (result.refusal) return 'refused';
  if (result.status === undefined) return result.error === 'timeout' ? 'timeout' : 'network';
  if (result.status >= 200 && result.status < 300) return 'success';
  if (result.status === 410) return 'gone';
  return result.status >= 300 && result.status < 400 ? 'redirect' : 'http_error';
}
