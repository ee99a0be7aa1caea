/**
 * Recoveries of a time range (`POST /subscriptions/{id}/recover`, issue 28), run on a lane of their
 * own: a recovery reads the log from its durable position, in log order, and posts each event of its
 * window that its subscription takes, one at a time, at most `perSecond` a second, under the
 * event's `webhook-id` for that subscription (the id every delivery of that event to it has, so
 * receivers de-duplicate). It never takes a slot of the delivery dispatcher: live deliveries keep
 * their own concurrency and retry schedule while a recovery runs.
 *
 * Durable and shared by replicas: a recovery is claimed with a lease (`claimRecovery`), its
 * position is saved at least every `SAVE_EVERY_MS` (renewing the lease) and when it stops; a
 * stopping replica gives the lease back, a dead one's recovery is taken over by another replica when
 * the lease ends, from the saved position (events after it may be sent again: at-least-once, the
 * same `webhook-id`); a stopping replica lets the post in flight end first (within `webhooks.timeout`),
 * so a graceful restart sends nothing twice. A failed post is tried again after `RETRY_DELAYS_MS`; after the last, or when
 * the subscription is disabled or deleted meanwhile, the recovery ends as `failed` or `cancelled`.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { DeliveryResponse } from '../../egress/delivery-client.ts';
import type { EventLog, StoredEvent } from '../../log/EventLog.ts';
import type { DeliveryPoster } from './delivery-dispatcher.ts';
import { messageId } from './fan-out.ts';
import { WEBHOOKS_SOURCE } from './operational-events.ts';
import { WebhookSigner } from './signer.ts';
import { deliverable, type SubscriptionAudience } from './audience.ts';
import type { EventVisibility } from '../../edge/access-rules.ts';
import { signingSecrets, type Recovery, type Subscription, type SubscriptionStore } from './SubscriptionStore.ts';

/** Events read from the log per page. */
export const RECOVERY_PAGE = 256;

/** Longest time between two saves of a running recovery's position (each renews its lease), ms. */
export const SAVE_EVERY_MS = 2000;

/** Lease of a claimed recovery, ms: another replica takes it over this long after its runner went silent. */
export const RECOVERY_LEASE_MS = 15_000;

/** How often a replica looks for a recovery to run (those started on other replicas, those whose runner died), ms. */
export const POLL_MS = 1000;

/** Delays before the retries of a failed post, ms; after the last, the recovery fails. */
export const RETRY_DELAYS_MS = [1000, 5000, 30_000, 60_000, 60_000];

/** Settings and collaborators of the runner. */
export interface RecoveryRunnerOptions {
  store: SubscriptionStore;
  log: Pick<EventLog, 'query'>;
  client: DeliveryPoster;
  /** `webhooks.recovery.perSecond`: posts a second per recovery at most. */
  perSecond: number;
  /** `webhooks.recovery.concurrency`: recoveries this replica runs at once. */
  concurrency: number;
  logger: Logger;
  /** The events each subscription may carry (per-caller catalogues); default every event it wants. */
  audience?: SubscriptionAudience;
  /** Retry delays; default `RETRY_DELAYS_MS` (tests shorten them). */
  retryDelaysMs?: number[];
  now?: () => number;
}

/** Runs the recoveries this replica claims. */
export class RecoveryRunner {
  readonly #o: RecoveryRunnerOptions;
  readonly #owner = randomUUID();
  readonly #now: () => number;
  readonly #signer = new WebhookSigner();
  readonly #running = new Set<Promise<void>>();
  readonly #stop = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #claiming = false;
  #closing: Promise<void> | undefined;

  constructor(options: RecoveryRunnerOptions) {
    this.#o = options;
    this.#now = options.now ?? Date.now;
  }

  /** Starts looking for recoveries (now and every `POLL_MS`). */
  start(): void {
    this.#timer = setInterval(() => this.wake(), POLL_MS);
    this.#timer.unref();
    this.wake();
  }

  /** Claims recoveries up to the concurrency (a recovery was started here). */
  wake(): void {
    if (this.#claiming || this.#stop.signal.aborted) return;
    this.#claiming = true;
    void this.#claim().finally(() => {
      this.#claiming = false;
    });
  }

  /** Stops: the running recoveries save their position and give their lease back. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearInterval(this.#timer);
      this.#stop.abort();
      await Promise.allSettled([...this.#running]);
    })();
    return this.#closing;
  }

  async #claim(): Promise<void> {
    try {
      while (this.#running.size < this.#o.concurrency && !this.#stop.signal.aborted) {
        const recovery = await this.#o.store.claimRecovery(this.#owner, this.#now(), RECOVERY_LEASE_MS);
        if (!recovery) return;
        const run: Promise<void> = this.#run(recovery)
          .catch((err: unknown) => this.#o.logger.error({ err, recovery: recovery.id }, 'webhook recovery stopped; another look when its lease ends'))
          .finally(() => this.#running.delete(run));
        this.#running.add(run);
      }
    } catch (err) {
      this.#o.logger.error({ err }, 'webhook recoveries could not be claimed; trying again');
    }
  }

  async #run(claimed: Recovery): Promise<void> {
    const run = new RecoveryRun(claimed, this.#owner, this.#o, this.#signer, this.#now, this.#stop.signal);
    await run.execute();
  }
}

/** One claimed recovery, from its saved position to its end, its lease lost, or the runner's stop. */
class RecoveryRun {
  #r: Recovery;
  readonly #owner: string;
  readonly #o: RecoveryRunnerOptions;
  readonly #signer: WebhookSigner;
  readonly #now: () => number;
  readonly #signal: AbortSignal;
  #savedMs: number;
  #nextPostMs = 0;
  #leaseLost = false;

  constructor(recovery: Recovery, owner: string, options: RecoveryRunnerOptions, signer: WebhookSigner, now: () => number, signal: AbortSignal) {
    this.#r = recovery;
    this.#owner = owner;
    this.#o = options;
    this.#signer = signer;
    this.#now = now;
    this.#signal = signal;
    this.#savedMs = now();
  }

  async execute(): Promise<void> {
    try {
      await this.#pages();
    } finally {
      if (!this.#leaseLost) await this.#save(true);
    }
    if (this.#r.status !== 'running') this.#o.logger.info({ recovery: this.#r.id, subscription: this.#r.subscriptionId, status: this.#r.status, delivered: this.#r.delivered }, 'webhook recovery ended');
  }

  async #pages(): Promise<void> {
    while (!this.#stopped()) {
      const subscription = await this.#o.store.get(this.#r.subscriptionId);
      if (!subscription) return this.#end('cancelled', 'the subscription was deleted');
      if (subscription.status !== 'active') return this.#end('failed', `the subscription is ${subscription.status}`);
      const page = await this.#o.log.query({ fromMs: this.#r.sinceMs, toMs: this.#r.untilMs }, this.#r.position, RECOVERY_PAGE);
      const events = page.events.filter((e) => e.position <= this.#r.endPosition);
      if (events.length === 0) return this.#end('completed');
      const visible = this.#o.audience?.(subscription);
      for (const stored of events) {
        if (this.#stopped()) return;
        if (takes(subscription, stored, visible)) {
          const sent = await this.#send(subscription, stored);
          if (sent === 'stopped') return;
          if (sent !== 'sent') return this.#end('failed', `event ${stored.event.id}: ${sent}`);
          this.#r.delivered += 1;
        }
        this.#r.position = stored.position;
        if (this.#now() - this.#savedMs >= SAVE_EVERY_MS) await this.#save(false);
      }
    }
  }

  /** Posts one event (paced), trying again after each `RETRY_DELAYS_MS`: `sent`, `stopped`, or why it failed. */
  async #send(subscription: Subscription, stored: StoredEvent): Promise<string> {
    const delays = this.#o.retryDelaysMs ?? RETRY_DELAYS_MS;
    const body = JSON.stringify(stored.event);
    const id = messageId(subscription.id, stored.event.id);
    for (let attempt = 0; ; attempt += 1) {
      if (!(await this.#wait(this.#pace()))) return 'stopped';
      const now = this.#now();
      const headers = this.#signer.headers(id, Math.floor(now / 1000), body, signingSecrets(subscription, now));
      // Not aborted at shutdown: a post the receiver may have taken must end, so its position is saved.
      const result = await this.#o.client.post(subscription.url, headers, body);
      if (result.status !== undefined && result.status >= 200 && result.status < 300) return 'sent';
      const delay = delays[attempt];
      if (delay === undefined || result.status === 410) return failure(result);
      if (!(await this.#wait(delay))) return 'stopped';
    }
  }

  /** How long until the next post may go (`perSecond`), and books it. */
  #pace(): number {
    const now = this.#now();
    const at = Math.max(now, this.#nextPostMs);
    this.#nextPostMs = at + 1000 / this.#o.perSecond;
    return at - now;
  }

  /** Waits `ms` (renewing the lease meanwhile); false when stopped or the lease was lost. */
  async #wait(ms: number): Promise<boolean> {
    let left = ms;
    while (left > 0) {
      const step = Math.min(left, SAVE_EVERY_MS);
      if (!(await sleep(step, this.#signal))) return false;
      left -= step;
      if (this.#now() - this.#savedMs >= SAVE_EVERY_MS) await this.#save(false);
      if (this.#stopped()) return false;
    }
    return !this.#stopped();
  }

  #end(status: Recovery['status'], error?: string): void {
    this.#r.status = status;
    if (error !== undefined) this.#r.error = error;
  }

  /** Saves the position (renewing the lease, or giving it back); a lease another replica took stops this run. */
  async #save(release: boolean): Promise<void> {
    const now = this.#now();
    this.#r.updatedMs = now;
    this.#savedMs = now;
    if (!(await this.#o.store.saveRecovery(this.#r, this.#owner, now, RECOVERY_LEASE_MS, release))) {
      this.#leaseLost = true;
      this.#o.logger.warn({ recovery: this.#r.id }, 'webhook recovery lease taken over by another replica: this one stops');
    }
  }

  #stopped(): boolean {
    return this.#signal.aborted || this.#leaseLost;
  }
}

/** True when `subscription` takes `stored` (its filter and its creator's view; never an operational event about itself). */
function takes(subscription: Subscription, stored: StoredEvent, visible: EventVisibility | undefined): boolean {
  if (stored.event.source === WEBHOOKS_SOURCE && stored.event.correlationid === subscription.id) return false;
  return deliverable(subscription, stored, visible);
}

function failure(result: DeliveryResponse): string {
  if (result.status !== undefined) return `receiver answered ${result.status}`;
  return result.error ?? 'no answer';
}

/** Resolves true after `ms`, or false at once when `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  if (ms <= 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      resolve(false);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
