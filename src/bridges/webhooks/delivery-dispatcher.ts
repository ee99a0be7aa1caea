/**
 * The delivery dispatcher: claims due deliveries from the queue with a lease (`DeliveryQueue.claim`)
 * and attempts them, at most `webhooks.concurrency` at once overall and `PER_SUBSCRIPTION` per
 * subscription (the queue enforces it across replicas), so one slow receiver holds at most its own
 * slots and never the others'. Claimed deliveries are held in memory until their attempt ends;
 * nothing in flight is read again, and a dead replica's claims come back to the others when their
 * lease ends. Each attempt is signed afresh (a new `webhook-timestamp`) under the delivery's stable
 * `webhook-id`, and its verdict (`retry-policy.ts`) is written to the queue, in batches with the
 * verdicts of attempts ending at the same time (`OutcomeWriter`), before the slot is freed; the
 * same write claims the deliveries that take the freed slots (`DeliveryQueue.settle`).
 *
 * An outcome the queue refuses (Redis restarting) is written again while the claim's lease lasts.
 *
 * Endpoint health (issue 28): every failed attempt extends the subscription's failing streak in the
 * store (shared by replicas), and the first success after one ends it (`SubscriptionRecoveredV1`).
 * A streak that has lasted `disableAfter.durationMs` and counts `disableAfter.failures` attempts
 * disables the subscription, as a `410 Gone` does (`SubscriptionDisabledV1`); its pending
 * deliveries are dropped. A delivery whose last attempt failed emits `DeliveryExhaustedV1`. A
 * healthy subscription costs no store write: only a success after a known streak ends it.
 *
 * Wake-ups: an enqueue (`wake()`), the end of an attempt (but a success, whose write refilled its
 * slot), and one timer at the earliest due retry, at most `idleMs` (default `MAX_IDLE_MS`) away,
 * also when its last look found nothing: slots freed, retries rescheduled and claims left by other
 * replicas, a dead one's included, come with no notice. `close()` stops taking deliveries, aborts
 * the attempts in flight and releases their claims without counting them (at-least-once: a
 * receiver may see such a message again).
 */
import type { Logger } from 'pino';
import type { WebhookMetrics } from '../../metrics/webhooks.ts';
import type { AttemptOutcome, ClaimedDelivery, DeliveryQueue } from './DeliveryQueue.ts';
import type { DeliveryResponse } from '../../egress/delivery-client.ts';
import { OutcomeWriter } from './outcome-writer.ts';
import { judgeAttempt, type AttemptVerdict } from '../../egress/retry-policy.ts';
import { WebhookSigner } from './signer.ts';
import { signingSecrets, type DisabledReason, type FailingStreak, type Subscription, type SubscriptionStore } from './SubscriptionStore.ts';
import type { OperationalEvents } from './operational-events.ts';
import type { DeliveryRateLimit } from './DeliveryRateLimit.ts';
import type { StillVisible } from './audience.ts';
import { retryWhileLeased } from '../../storage/retry-while-leased.ts';
import { serverAttributes, startDeliverySpan, tracedAttempt, type Span } from '../../telemetry/tracing.ts';

/** Delay of the next look at the queue after a failure to read it, ms. */
const QUEUE_ERROR_BACKOFF_MS = 1000;

/** Longest sleep between two looks at the queue, ms: slots freed and retries rescheduled by other replicas wake no one here. */
export const MAX_IDLE_MS = 1000;

/** Subscriptions whose last rate turn the dispatcher remembers at most; beyond, it starts over. */
export const MAX_TRACKED_TURNS = 10_000;

/** What a lease adds to the attempt timeout by default, ms. */
export const LEASE_MARGIN_MS = 5000;

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
  /**
   * Lease of a claimed delivery, ms: no other claimer takes it meanwhile; a dead claimer's
   * deliveries come back after it. Give the attempt timeout (`webhooks.timeout`) plus
   * `LEASE_MARGIN_MS`, so an attempt never outlives its lease.
   */
  leaseMs: number;
  metrics: WebhookMetrics;
  logger: Logger;
  /** Where disabling, recovering and exhausting are told (the log). */
  events: OperationalEvents;
  /** `webhooks.disableAfter`: a failing streak this long (ms) and this many attempts disables the subscription; `durationMs` 0 = never. */
  disableAfter: DisableAfter;
  /** Per-endpoint rate: a delivery whose subscription has no free slot is put back, due when it has (not counted). */
  rateLimit?: { limiter: DeliveryRateLimit; defaultPerSecond: number };
  /** Whether a delivery's event is still one its subscription's creator sees (a reload may have hidden it); default always. */
  stillVisible?: StillVisible;
  /** Whether every caller sees an event (`DeliveryExhaustedV1`, read by every caller, names it only then); default always. */
  seenByEveryone?: (eventId: string) => Promise<boolean>;
  /** Longest sleep between two looks at the queue, ms; default `MAX_IDLE_MS`. */
  idleMs?: number;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

/** When a failing subscription is disabled: its streak has lasted `durationMs` (0 = never) and counts `failures` attempts. */
export interface DisableAfter {
  durationMs: number;
  failures: number;
}

/** True when `streak` is long enough to disable its subscription. */
export function streakDisables(streak: FailingStreak, nowMs: number, rule: DisableAfter): boolean {
  return rule.durationMs > 0 && nowMs - streak.sinceMs >= rule.durationMs && streak.failures >= rule.failures;
}

interface Attempt {
  subscriptionId: string;
  controller: AbortController;
  done: Promise<void>;
}

/** A release outcome: the claim back to `pending`, due now, not counted. */

/** Runs delivery attempts from the queue within the concurrency limits. */
export class DeliveryDispatcher {
  readonly #o: DispatcherOptions;
  readonly #now: () => number;
  readonly #outcomes: OutcomeWriter;
  readonly #signer = new WebhookSigner();
  readonly #inFlight = new Set<Attempt>();
  /** Subscription id → the last turn given to one of its deliveries put back by its rate, epoch ms. */
  readonly #turns = new Map<string, number>();
  #timer: NodeJS.Timeout | undefined;
  #pump: Promise<void> | undefined;
  #again = false;
  #wakeScheduled = false;
  #closed = false;
  /** Aborted at shutdown: ends the waits between tries of a refused outcome. */
  readonly #stop = new AbortController();
  #closing: Promise<void> | undefined;

  constructor(options: DispatcherOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
    this.#outcomes = new OutcomeWriter(options.queue, {
      leaseMs: options.leaseMs,
      // The slots the ending attempts free (they still count in #inFlight), none once stopping.
      limit: (ending) => (this.#closed ? 0 : Math.max(0, this.#o.concurrency - this.#inFlight.size + ending)),
      claimed: (deliveries) => this.#start(deliveries),
      inFlight: () => this.#inFlight.size,
    });
  }

  /** Starts dispatching. Deliveries a killed process left in flight are claimed again when their lease ends. */
  async start(): Promise<void> {
    this.wake();
  }

  /**
   * Looks at the queue soon (after an enqueue, the end of an attempt). The calls of one turn of the
   * event loop are coalesced into one look, so attempts whose outcomes were written together free
   * their slots into one claim.
   */
  wake(): void {
    if (this.#closed || this.#wakeScheduled) return;
    this.#wakeScheduled = true;
    setImmediate(() => {
      this.#wakeScheduled = false;
      if (this.#closed) return;
      if (this.#pump) {
        this.#again = true;
        return;
      }
      this.#pump = this.#run().finally(() => {
        this.#pump = undefined;
      });
    });
  }

  /** Aborts the attempts in flight to a subscription (it was deleted). */
  abortSubscription(subscriptionId: string): void {
    for (const attempt of this.#inFlight) if (attempt.subscriptionId === subscriptionId) attempt.controller.abort();
  }

  /** Number of attempts in flight. */
  get inFlight(): number {
    return this.#inFlight.size;
  }

  /** Stops dispatching; aborted attempts' claims are released (due again, not counted). Resolves when every write is done. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    this.#closed = true;
    this.#stop.abort();
    clearTimeout(this.#timer);
    await this.#pump;
    for (const attempt of this.#inFlight) attempt.controller.abort();
    await Promise.allSettled([...this.#inFlight].map((a) => a.done));
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

  /** Claims due deliveries up to the free slots and starts them, until the global limit is reached or nothing more is due. */
  async #fill(): Promise<void> {
    while (!this.#closed) {
      const free = this.#o.concurrency - this.#inFlight.size;
      if (free <= 0) return;
      const claimed = await this.#o.queue.claim(this.#now(), free, this.#o.leaseMs);
      await this.#start(claimed);
      if (claimed.length < free) return;
    }
  }

  /** Counts claimed deliveries and starts their attempts; when stopping, releases them instead (resolves once released). */
  async #start(claimed: ClaimedDelivery[]): Promise<void> {
    for (const delivery of claimed) this.#o.metrics.claims.inc({ outcome: delivery.reclaimed ? 'reclaimed' : 'claimed' });
    if (this.#closed) {
      return this.#release(claimed).catch((err: unknown) => {
        this.#o.logger.warn({ err }, 'claimed webhook deliveries could not be released; they are due again when their lease ends');
      });
    }
    // One subscription read per claimed batch, shared by its deliveries to that subscription.
    const subscriptions = new Map<string, Promise<Subscription | undefined>>();
    for (const delivery of claimed) {
      const id = delivery.subscriptionId;
      if (!subscriptions.has(id)) subscriptions.set(id, this.#o.subscriptions.get(id));
      this.#launch(delivery, subscriptions.get(id)!);
    }
  }

  /** Gives claims back unattempted (shutdown): due again now, the attempt not counted. */
  async #release(claimed: ClaimedDelivery[]): Promise<void> {
    if (claimed.length === 0) return;
    const released = await this.#o.queue.release(claimed, this.#now());
    this.#o.metrics.claims.inc({ outcome: 'released' }, released);
  }

  /**
   * Registers an attempt as in flight and runs it; its end frees the slot and wakes the pump, except
   * after a success whose write refilled the slots while other attempts are in flight (issue 28):
   * that write claimed whatever was due, a success makes nothing due, an enqueue wakes the pump by
   * itself, and the writes of the attempts still in flight claim what falls due meanwhile, so another
   * look (a claim that finds nothing, then `nextDueMs`) would cost a transaction per attempt.
   */
  #launch(delivery: ClaimedDelivery, subscription: Promise<Subscription | undefined>): void {
    const controller = new AbortController();
    const attempt: Attempt = { subscriptionId: delivery.subscriptionId, controller, done: Promise.resolve() };
    this.#inFlight.add(attempt);
    let refilled = false;
    attempt.done = this.#attempt(delivery, subscription, controller.signal)
      .then((succeeded) => void (refilled = succeeded))
      .catch((err: unknown) => this.#o.logger.error({ err, delivery: delivery.id }, 'webhook attempt could not be recorded; the delivery is due again when its lease ends'))
      .finally(() => {
        this.#inFlight.delete(attempt);
        // The last attempt to end always looks again: it arms the timer of the next due retry.
        if (!refilled || this.#inFlight.size === 0) this.wake();
      });
  }

  /** Runs one attempt; true when it succeeded and its outcome was written (by a write that refilled the free slots). */
  async #attempt(delivery: ClaimedDelivery, subscriptionRead: Promise<Subscription | undefined>, signal: AbortSignal): Promise<boolean> {
    const { queue } = this.#o;
    const subscription = await subscriptionRead;
    if (!subscription) {
      // Deleted while this delivery was queued (or its deletion was cut short): nothing is delivered.
      await queue.deleteSubscription(delivery.subscriptionId);
      return false;
    }
    if (signal.aborted) return this.#releaseOne(delivery);
    if (subscription.status !== 'active') {
      await this.#record(delivery, { status: 'dead', uncount: true });
      return false;
    }
    if (this.#o.stillVisible && !(await this.#o.stillVisible(subscription, delivery.eventId))) {
      // Queued while its creator saw the event; the rules changed since (a reload): never sent.
      await this.#record(delivery, { status: 'dead', uncount: true });
      return false;
    }
    const turnMs = await this.#rateTurn(subscription);
    if (turnMs !== undefined) {
      // Its turn has not come: back in the queue, due when it comes, the attempt not counted (never dropped).
      this.#o.metrics.claims.inc({ outcome: 'rate_limited' });
      await this.#record(delivery, { status: 'pending', nextAttemptMs: turnMs, uncount: true });
      return false;
    }
    const started = this.#now();
    const result = await this.#post(subscription, delivery, signal);
    if (signal.aborted) return this.#releaseOne(delivery);
    this.#o.metrics.latency.observe((this.#now() - started) / 1000);
    this.#o.metrics.attempts.inc({ result: attemptResult(result) });
    const verdict = judgeAttempt(result, delivery.attempts, this.#o.scheduleMs, this.#now());
    if (!(await this.#record(delivery, verdict.outcome))) return false;
    await this.#settle(subscription, delivery, verdict);
    return verdict.kind === 'succeeded';
  }

  /** Releases an aborted attempt's claim (`#release`); false: its end wakes the pump. */
  async #releaseOne(delivery: ClaimedDelivery): Promise<false> {
    await this.#release([delivery]);
    return false;
  }

  /**
   * Writes an attempt's outcome (batched); false, counted as `lost`, when the lease had run out and
   * another claimer took the delivery over. A write the store refuses (Redis restarting) is tried
   * again while the lease lasts, so a short outage delays the outcome instead of having the delivery
   * attempted a second time.
   */
  async #record(delivery: ClaimedDelivery, outcome: AttemptOutcome): Promise<boolean> {
    const recorded = await this.#whileLeased(delivery, () => this.#outcomes.record({ id: delivery.id, claim: delivery.claim, outcome }, this.#now()));
    if (!recorded) {
      this.#o.metrics.claims.inc({ outcome: 'lost' });
      this.#o.logger.warn({ delivery: delivery.id }, 'webhook attempt outlived its lease: its outcome is left to the claimer that took the delivery over');
    }
    return recorded;
  }

  /** Runs `write` until the queue takes it, while the claim's lease lasts and the dispatcher is open (`retryWhileLeased`). */
  #whileLeased<T>(delivery: ClaimedDelivery, write: () => Promise<T>): Promise<T> {
    return retryWhileLeased(write, {
      leaseEndMs: delivery.leaseUntilMs,
      signal: this.#stop.signal,
      now: this.#now,
      onFirstRefusal: (err) => this.#o.logger.warn({ err, delivery: delivery.id }, 'webhook outcome not recorded: the queue refused it; trying again while its lease lasts'),
    });
  }

  /**
   * Undefined when the subscription's rate lets this attempt go now (its slot booked); else when it
   * should be due again. The deliveries of one subscription put back one after the other get turns
   * one interval apart, so a backlog is spread over its future slots and each delivery is put back
   * about once, instead of every delivery being claimed and put back at every slot.
   */
  async #rateTurn(subscription: Subscription): Promise<number | undefined> {
    const rate = this.#o.rateLimit;
    const perSecond = subscription.rateLimit?.perSecond ?? rate?.defaultPerSecond ?? 0;
    if (!rate || perSecond <= 0) return undefined;
    const waitMs = await rate.limiter.reserve(subscription.id, perSecond);
    if (waitMs <= 0) return undefined;
    const earliest = this.#now() + waitMs;
    const last = this.#turns.get(subscription.id);
    const turn = last !== undefined && last + 1000 / perSecond > earliest ? last + 1000 / perSecond : earliest;
    if (this.#turns.size >= MAX_TRACKED_TURNS) this.#turns.clear();
    this.#turns.set(subscription.id, turn);
    return Math.ceil(turn);
  }

  #post(subscription: Subscription, delivery: ClaimedDelivery, signal: AbortSignal): Promise<DeliveryResponse> {
    const now = this.#now();
    const headers = this.#signer.headers(delivery.id, Math.floor(now / 1000), delivery.payload, signingSecrets(subscription, now));
    // The receiver continues the delivery's trace (W3C Trace Context; the signature does not cover headers).
    return tracedAttempt(webhookSpan(subscription, delivery), (traceparent) =>
      this.#o.client.post(subscription.url, traceparent === undefined ? headers : { ...headers, traceparent }, delivery.payload, signal));
  }

  /**
   * Counts the end of an attempt and keeps the subscription's health: a `410 Gone` or a failing
   * streak past `disableAfter` disables it and drops its pending deliveries; a success after a
   * streak ends it; a last attempt that failed is told as exhausted.
   */
  async #settle(subscription: Subscription, delivery: ClaimedDelivery, verdict: AttemptVerdict): Promise<void> {
    const { metrics, subscriptions, events } = this.#o;
    const now = this.#now();
    if (verdict.kind === 'succeeded') {
      metrics.deliveries.inc({ outcome: 'succeeded' });
      if (subscription.failing === undefined) return;
      const ended = await subscriptions.recordAttempt(subscription.id, true, now);
      if (ended) await events.recovered(subscription.id, ended, now);
      return;
    }
    const streak = await subscriptions.recordAttempt(subscription.id, false, now);
    if (verdict.kind === 'gone') {
      metrics.deliveries.inc({ outcome: 'gone' });
      await this.#disable(subscription.id, 'gone', now, streak);
      return;
    }
    if (verdict.outcome.status === 'dead') {
      metrics.deliveries.inc({ outcome: 'dead' });
      metrics.deadLetters.inc();
      await events.exhausted(delivery, now, verdict.outcome, (await this.#o.seenByEveryone?.(delivery.eventId)) ?? true);
    }
    if (streak && streakDisables(streak, now, this.#o.disableAfter)) await this.#disable(subscription.id, 'failing', now, streak);
  }

  /** Disables a subscription and drops its pending deliveries; only the writer whose change took effect tells it. */
  async #disable(id: string, reason: DisabledReason, now: number, streak: FailingStreak | undefined): Promise<void> {
    if (!(await this.#o.subscriptions.setStatus(id, 'disabled', { atMs: now, reason }))) return;
    const dropped = await this.#o.queue.cancelPending(id);
    const why = reason === 'gone' ? 'webhook receiver answered 410 Gone' : 'webhook deliveries kept failing for webhooks.disableAfter';
    this.#o.logger.warn({ subscription: id, dropped, failures: streak?.failures }, `${why}: subscription disabled`);
    await this.#o.events.disabled(id, reason, now, streak);
  }

  /** After a pass: a timer at the earliest due work, at most `idleMs` away (also when nothing is queued). */
  async #armTimer(): Promise<void> {
    if (this.#closed) return;
    // An empty queue is looked at again too: a dead replica's claims and retries come back with no notice.
    const next = (await this.#o.queue.nextDueMs()) ?? Infinity;
    const delay = next - this.#now();
    // Due but not started: it waits for a slot, and the writes that refill freed slots claim it. A
    // retry falling due later is not `next`, and a success whose write refilled its slot wakes no
    // one: the pump looks again within `MAX_IDLE_MS`, so that retry never waits for a slow attempt.
    const idleMs = this.#o.idleMs ?? MAX_IDLE_MS;
    if (delay <= 0 && this.#inFlight.size > 0) return this.#setTimer(idleMs);
    this.#setTimer(Math.min(Math.max(delay, 10), idleMs));
  }

  #setTimer(delayMs: number): void {
    if (this.#closed) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.wake(), delayMs);
    this.#timer.unref();
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

/**
 * The span of one webhook attempt, linked to the delivered event's trace (its `traceparent`, read
 * from the payload only when the span records). The target's host and port, never its URL: a path
 * may hold a secret (as some receivers' URLs do).
 */
function webhookSpan(subscription: Subscription, delivery: ClaimedDelivery): Span {
  return startDeliverySpan(
    'webhook',
    subscription.id,
    () => ({ id: delivery.eventId, type: delivery.eventType, traceparent: payloadTraceparent(delivery.payload) }),
    () => ({ 'http.request.method': 'POST', 'proto.delivery.id': delivery.id, 'proto.delivery.attempt': delivery.attempts, ...serverAttributes(subscription.url) }),
  );
}

/** The `traceparent` extension of an event payload, if any. */
function payloadTraceparent(payload: string): unknown {
  try {
    return (JSON.parse(payload) as { traceparent?: unknown }).traceparent;
  } catch {
    return undefined;
  }
}
