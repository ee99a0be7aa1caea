/**
 * The dispatcher (`commands.dispatch`): delivers outbox entries to their backends.
 *
 * - Work in memory is bounded: each backend has a lane (`lane.ts`) of at most `concurrency` calls
 *   in flight, and the outbox is asked for no more than a lane can take. Everything else waits in
 *   the durable outbox, so undelivered commands survive a restart and are delivered after it.
 * - It wakes when a command enters the outbox, when an attempt ends, and on a timer set to the
 *   earliest due retry, at most `idleMs` away even when its last look found nothing: entries it
 *   holds no notice of (those another replica claimed and died with, or those an accept wrote
 *   claimed before its commit failed or its answer was lost) are due when their lease ends, and
 *   a replica whose commands all come claimed at accept would otherwise never look again.
 * - An attempt has `timeout`; connection errors, timeouts, 5xx and 429 are retried per
 *   `retry.schedule` with jitter (honouring `Retry-After`); other 4xx are final. A final failure
 *   appends the backend adapter's failure event.
 * - `close()` stops taking work, waits for attempts in flight until `drainMs`, then aborts the
 *   rest; an aborted attempt's entry is released (due again at once) and delivered after restart.
 * - Entries are claimed with a lease (`Outbox.claimDue`): held in memory while in flight, hidden
 *   from every other claimer (another replica on a shared store), and back when a crashed
 *   claimer's lease runs out. Nothing in flight is read again. `proto_gateway_outbox_claims_total`
 *   counts claims, reclaims (work taken over from a dead claimer) and releases.
 * - New commands come claimed (issue 29): the group commit of their accept claims them in the same
 *   write, for as many as a lane has free slots (`reserve`), and hands them over in memory
 *   (`handOver`, `AcceptHandoff`). The outbox is read again only when it may hold due entries not
 *   in memory (an accept found the lane full, a retry, a restart, a timer, another replica's
 *   entries): an attempt that completes does not make the dispatcher look at the outbox otherwise.
 * - A paused backend (`isPaused`) is skipped: its commands wait in the outbox until it is resumed
 *   (then `wake()`). Backends come and go at runtime: `deliveries` is read at every pass.
 * - The bookkeeping of an attempt that reached the backend (result events, completion, reschedule)
 *   is tried again while the store refuses it (Redis restarting) and the claim's lease lasts, so a
 *   short store outage delays it instead of having the command delivered a second time.
 * - The adapters ask the backend's circuit before each attempt; an open circuit is a transient
 *   failure like any other (retried, not before the `Retry-After` it gives).
 */
import type { Logger } from 'pino';
import type { CloudEvent, EventLog } from '../log/EventLog.ts';
import type { AttemptOutcome, CommandMetrics } from '../metrics/commands.ts';
import type { ClaimedOutboxEntry, CorrelationAliases, Outbox, OutboxEntry } from './CommandStore.ts';
import { defaultFailureType, failureData, resultEvent, type CommandDelivery, type DeliveryOutcome, type FailureReason } from './delivery.ts';
import type { AcceptHandoff } from './group-commit.ts';
import { parseRetryAfter, retryDelayMs } from './retry-schedule.ts';
import { retryWhileLeased } from '../storage/retry-while-leased.ts';
import { annotate, inSpan, linksTo, messagingAttributes, SpanKind, startSpan, type Span } from '../telemetry/tracing.ts';
import { appendTraced } from '../log/traced-append.ts';
import { Lane } from './lane.ts';

/** Longest sleep between two looks at the outbox by default, in ms (also the poll while every lane is busy). */
export const MAX_IDLE_MS = 1_000;

/** Entries of a removed backend ended per claim by `abandon`. */
const ABANDON_BATCH = 100;

/** What a lease adds to the attempt timeout by default, in ms. */
export const LEASE_MARGIN_MS = 5_000;

/** Options of a `Dispatcher`. */
export interface DispatcherOptions {
  outbox: Outbox;
  aliases: CorrelationAliases;
  log: EventLog;
  /** The adapter of each backend, by backend id; read at every pass (the wiring adds and removes runtime backends). */
  deliveries: Map<string, CommandDelivery>;
  /** True while a backend is paused (its entries are left in the outbox); default never. */
  isPaused?: (backend: string) => boolean;
  /** Deadline of one attempt, in ms. */
  timeoutMs: number;
  /** Backend calls in flight per backend at most (an attempt whose call is over and whose outcome is being written no longer counts). */
  concurrency: number;
  /** Delays of the retries after the first try, in ms. */
  retryScheduleMs: number[];
  /** How long `close()` waits for attempts in flight before aborting them, in ms. */
  drainMs: number;
  /** Longest sleep between two looks at the outbox, in ms; default `MAX_IDLE_MS`. */
  idleMs?: number;
  /**
   * Lease of a claimed entry, in ms: no other claimer (another replica on a shared store) takes it
   * meanwhile; a crashed claimer's entries come back after it. Default `timeoutMs` + `LEASE_MARGIN_MS`
   * (an attempt never outlives its lease).
   */
  leaseMs?: number;
  metrics: CommandMetrics;
  logger: Logger;
  /** Jitter source in [0, 1); default `Math.random`. */
  random?: () => number;
}

export class Dispatcher implements AcceptHandoff {
  readonly #options: DispatcherOptions;
  /** Each backend's entries in flight and the slots they take. */
  readonly #lanes = new Map<string, Lane>();
  /** False only while every due entry the outbox may hold is known to be in memory (see `wake`). */
  #mayHoldDue = true;
  readonly #attempts = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #pumping = false;
  /** The running look at the outbox, if any (shutdown waits for it and the releases it writes). */
  #pumpRun: Promise<void> | undefined;
  #again = false;
  #wakeScheduled = false;
  #started = false;
  #closing: Promise<void> | undefined;

  constructor(options: DispatcherOptions) {
    this.#options = options;
  }

  /** Reports entries of backends no longer configured (they stay in the outbox) and starts delivering. */
  async start(): Promise<void> {
    this.#started = true;
    const orphans = (await this.#options.outbox.backends()).filter((backend) => !this.#options.deliveries.has(backend));
    if (orphans.length > 0) this.#options.logger.warn({ backends: orphans }, 'outbox holds commands for backends that are not configured; they stay undelivered');
    this.wake();
  }

  /**
   * Looks at the outbox soon (a command was enqueued, an attempt ended). Cheap: the calls of one
   * turn of the event loop are coalesced into one look.
   */
  wake(): void {
    // Whoever wakes the dispatcher may have left due entries in the outbox (an unclaimed enqueue,
    // a timer, a resumed backend): the next completion looks again too, until a look finds none.
    this.#mayHoldDue = true;
    if (!this.#started || this.#closing || this.#wakeScheduled) return;
    this.#wakeScheduled = true;
    setImmediate(() => {
      this.#wakeScheduled = false;
      if (this.#pumping) this.#again = true;
      else this.#pumpRun = this.#pump();
    });
  }

  /**
   * Stops taking work; waits for attempts in flight up to `drainMs` (or until `deadlineMs`, epoch
   * ms, when that comes sooner: the gateway's one shutdown deadline), then aborts them. An aborted
   * attempt leaves its entry in the outbox. Idempotent.
   */
  close(deadlineMs?: number): Promise<void> {
    const waitMs = Math.min(this.#options.drainMs, deadlineMs === undefined ? Infinity : Math.max(0, deadlineMs - Date.now()));
    this.#closing ??= this.#drain(waitMs);
    return this.#closing;
  }

  async #drain(waitMs: number): Promise<void> {
    clearTimeout(this.#timer);
    let deadline: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => (deadline = setTimeout(resolve, waitMs)));
    await Promise.race([Promise.allSettled([...this.#attempts]), timedOut]);
    clearTimeout(deadline);
    this.#abort.abort(new Error('the gateway is shutting down'));
    await Promise.allSettled([...this.#attempts, this.#pumpRun]);
  }

  /**
   * Ends every outbox entry of a backend that was removed (`DELETE /services/{id}`): each gets its
   * failure event (`<Type>FailedV1`, `data.error.code: SERVICE_NOT_FOUND`, from `source`) and leaves
   * the outbox, retries scheduled for later included. An attempt already in flight here finishes
   * on its own; returns how many entries were ended.
   */
  async abandon(backend: string, source: string): Promise<number> {
    const reason: FailureReason = { code: 'SERVICE_NOT_FOUND', message: `service "${backend}" was removed before the command was delivered` };
    const inFlight = this.#lanes.get(backend)?.seqs ?? new Set<number>();
    let ended = 0;
    for (;;) {
      // Due "at the end of time": every entry, whatever its next attempt, except those claimed just now.
      const claimed = await this.#options.outbox.claimDue(backend, Number.MAX_SAFE_INTEGER, ABANDON_BATCH, this.leaseMs);
      const entries = claimed.filter((entry) => !inFlight.has(entry.seq));
      for (const entry of entries) {
        this.#fail(entry, reason);
        const event = resultEvent({ type: defaultFailureType(entry.command.type), source, correlationId: entry.id, data: failureData(reason) });
        await this.#finish(entry, [event]);
      }
      ended += entries.length;
      if (claimed.length < ABANDON_BATCH) return ended;
    }
  }

  async #pump(): Promise<void> {
    this.#pumping = true;
    try {
      do {
        this.#again = false;
        // Set again by a wake meanwhile, or by a fill that may have left due entries behind.
        this.#mayHoldDue = false;
        for (const backend of [...this.#options.deliveries.keys()]) {
          if (!this.#options.isPaused?.(backend)) await this.#fill(backend, this.#laneOf(backend));
        }
      } while (this.#again && !this.#closing);
      await this.#armTimer();
    } catch (err) {
      this.#options.logger.error({ err }, 'dispatcher could not read the outbox');
      this.#timer = setTimeout(() => this.wake(), this.#idleMs);
    } finally {
      this.#pumping = false;
      // A wake during the last look's end (arming the timer) would otherwise wait for the timer.
      if (this.#again && !this.#closing) this.wake();
    }
  }

  /** The lane of a backend (it stays while it holds entries, even after its backend is gone). */
  #laneOf(backend: string): Lane {
    let lane = this.#lanes.get(backend);
    if (!lane) {
      lane = new Lane(this.#options.concurrency);
      this.#lanes.set(backend, lane);
    }
    return lane;
  }

  /**
   * Claims the due entries of one backend, up to its free slots, and starts their attempts. A
   * claimed entry is held in memory (the lane) until its attempt ends; the store hides it from
   * every claimer meanwhile, so nothing in flight is read again.
   */
  async #fill(backend: string, lane: Lane): Promise<void> {
    const free = lane.free;
    const delivery = this.#options.deliveries.get(backend);
    if (this.#closing || !delivery) return;
    if (free <= 0) {
      // The lane is full: whatever is due waits, and the next completion looks again.
      this.#mayHoldDue = true;
      return;
    }
    const claimedMs = Date.now();
    // The slots stay reserved while the claim is in flight: a commit's handover meanwhile must not take them too.
    lane.reserve(free);
    let claimed: ClaimedOutboxEntry[];
    try {
      claimed = await this.#options.outbox.claimDue(backend, claimedMs, free, this.leaseMs);
    } finally {
      lane.unreserve(free);
    }
    if (claimed.length === free) this.#mayHoldDue = true;
    for (const entry of claimed) this.#options.metrics.countClaim(backend, entry.reclaimed ? 'reclaimed' : 'claimed');
    // Shutdown began while claiming: every entry goes back, none waits for its lease to end.
    if (this.#closing) {
      await Promise.all(claimed.map((entry) => this.#release(entry)));
      return;
    }
    for (const entry of claimed) if (!lane.seqs.has(entry.seq)) this.#start(backend, delivery, lane, entry, claimedMs + this.leaseMs);
  }

  get #idleMs(): number {
    return this.#options.idleMs ?? MAX_IDLE_MS;
  }

  /** The lease of a claim, in ms (`leaseMs`, default `timeoutMs` + `LEASE_MARGIN_MS`). */
  get leaseMs(): number {
    return this.#options.leaseMs ?? this.#options.timeoutMs + LEASE_MARGIN_MS;
  }

  /** `AcceptHandoff`: slots for entries claimed at accept; none before `start()`, while closing, or for a paused or unknown backend. */
  reserve(backend: string, wanted: number): number {
    if (!this.#started || this.#closing || this.#options.isPaused?.(backend) || !this.#options.deliveries.has(backend)) return 0;
    const lane = this.#laneOf(backend);
    const granted = Math.max(0, Math.min(wanted, lane.free));
    lane.reserve(granted);
    return granted;
  }

  /** `AcceptHandoff`: starts the attempts of entries claimed at accept (released at once when shutdown began or the backend went away meanwhile). */
  handOver(backend: string, entries: OutboxEntry[], reserved: number, claimedMs: number): void {
    const lane = this.#laneOf(backend);
    lane.unreserve(reserved);
    const delivery = this.#options.deliveries.get(backend);
    for (const entry of entries) {
      this.#options.metrics.countClaim(backend, 'claimed');
      if (this.#closing || !delivery) void this.#release(entry);
      else this.#start(backend, delivery, lane, entry, claimedMs + this.leaseMs);
    }
    if (lane.empty && !delivery) this.#lanes.delete(backend);
    // Slots that went unused (held ids, a failed commit) may be what an entry waiting in the outbox needs.
    if (reserved > entries.length && this.#mayHoldDue) this.wake();
  }

  /** Ends the claim of an entry not attempted after all (shutdown): due again now, for the next process. */
  #release(entry: OutboxEntry): Promise<void> {
    this.#options.metrics.countClaim(entry.backend, 'released');
    return this.#options.outbox.reschedule(entry.seq, entry.attempts, Date.now(), entry.lastError ?? '').catch((err: unknown) => {
      this.#options.logger.warn({ err, command: entry.id }, 'could not release a claimed command; it is due again when its lease ends');
    });
  }

  #start(backend: string, delivery: CommandDelivery, lane: Lane, entry: OutboxEntry, leaseEndMs: number): void {
    lane.seqs.add(entry.seq);
    let settling = false;
    const callEnded = (): void => {
      settling = true;
      lane.settle(1);
      // Its slot is free while the outcome is written: worth a look when the outbox may hold due entries not in memory.
      if (this.#mayHoldDue) this.wake();
    };
    const takeSlotAgain = (): void => {
      if (settling) lane.settle(-1);
      settling = false;
    };
    const release = (completed: boolean): void => {
      takeSlotAgain();
      lane.seqs.delete(entry.seq);
      if (lane.empty && !this.#options.deliveries.has(backend)) this.#lanes.delete(backend);
      // An entry left in the outbox (a retry, a release) is due again: look. A completion frees a
      // slot, worth a look only when the outbox may hold due entries not in memory.
      if (!completed || this.#mayHoldDue) this.wake();
    };
    const attempt = this.#attempt(delivery, entry, leaseEndMs, callEnded).then(release, (err: unknown) => {
      // The store or the log failed: keep the slot taken for a while rather than spin on the entry.
      takeSlotAgain();
      this.#options.logger.error({ err, command: entry.id, backend }, 'command attempt failed unexpectedly');
      setTimeout(() => release(false), MAX_IDLE_MS).unref();
    });
    this.#attempts.add(attempt);
    void attempt.finally(() => this.#attempts.delete(attempt));
  }

  async #armTimer(): Promise<void> {
    clearTimeout(this.#timer);
    if (this.#closing) return;
    // An empty outbox is looked at again too: what another replica claims and leaves comes with no notice.
    const next = (await this.#options.outbox.nextDueMs()) ?? Infinity;
    const delay = next > Date.now() ? Math.min(next - Date.now(), this.#idleMs) : this.#idleMs;
    this.#timer = setTimeout(() => this.wake(), delay);
    this.#timer.unref();
  }

  /**
   * One attempt and its consequences (result events, completion, or a rescheduled retry) while its
   * claim lasts (`leaseEndMs`); true when the entry left the outbox (completed). `callEnded` is
   * called once the backend call is over (answered, failed or timed out), before its outcome is written.
   */
  #attempt(delivery: CommandDelivery, entry: OutboxEntry, leaseEndMs: number, callEnded: () => void): Promise<boolean> {
    // A trace of its own (it runs after the accept, maybe on another replica), linked to the
    // accept's span through the traceparent stored with the entry.
    const span = startSpan(() => `dispatch ${entry.backend}`, {
      kind: SpanKind.CONSUMER,
      root: true,
      links: () => linksTo(entry.traceparent),
      attributes: () => ({
        ...messagingAttributes('process', 'dispatch', entry.backend),
        'messaging.message.id': entry.id,
        'proto.command.id': entry.id,
        'proto.command.type': entry.command.type,
        'proto.backend': entry.backend,
        'proto.dispatch.attempt': entry.attempts + 1,
      }),
    });
    return inSpan(span, () => this.#attemptIn(span, delivery, entry, leaseEndMs, callEnded));
  }

  async #attemptIn(span: Span, delivery: CommandDelivery, entry: OutboxEntry, leaseEndMs: number, callEnded: () => void): Promise<boolean> {
    const started = performance.now();
    let outcome: DeliveryOutcome;
    try {
      outcome = await delivery.deliver(entry, this.#abort.signal, this.#options.timeoutMs);
    } catch (err) {
      if (this.#abort.signal.aborted) {
        this.#observe(entry, 'aborted', started);
        annotate(span, () => ({ 'proto.dispatch.outcome': 'aborted' }));
        await this.#release(entry);
        return false;
      }
      outcome = { kind: 'retry', reason: reasonOf(err), ...retryAfterOf(err) };
    }
    callEnded();
    this.#observe(entry, outcome.kind, started);
    annotate(span, () => ({ 'proto.dispatch.outcome': outcome.kind, ...('reason' in outcome && { 'error.type': outcome.reason.code }) }));
    if (outcome.kind === 'retry') return this.#retry(delivery, entry, leaseEndMs, outcome.reason, outcome.retryAfterMs);
    if (outcome.kind === 'delivered' && outcome.backendId !== undefined) await this.#remember(entry, leaseEndMs, outcome.backendId);
    if (outcome.kind === 'rejected') this.#fail(entry, outcome.reason);
    await this.#persist(entry, leaseEndMs, () => this.#finish(entry, outcome.events));
    return true;
  }

  /** A failed attempt: rescheduled (false), or failed for good with its failure event (true: completed). */
  async #retry(delivery: CommandDelivery, entry: OutboxEntry, leaseEndMs: number, reason: FailureReason, retryAfterMs?: number): Promise<boolean> {
    const attempts = entry.attempts + 1;
    // The backend was removed while this attempt was in flight: no later attempt would run.
    const gone = !this.#options.deliveries.has(entry.backend);
    const delay = gone ? undefined : retryDelayMs(this.#options.retryScheduleMs, attempts, retryAfterMs, this.#options.random);
    if (delay === undefined) {
      this.#fail(entry, reason);
      const events = [await delivery.failureEvent(entry, reason)];
      await this.#persist(entry, leaseEndMs, () => this.#finish(entry, events));
      return true;
    }
    this.#options.metrics.countRetry(entry.backend);
    this.#options.logger.info({ command: entry.id, backend: entry.backend, attempts, delayMs: delay, reason: reason.message }, 'command delivery will be retried');
    const nextAttemptMs = Date.now() + delay;
    await this.#persist(entry, leaseEndMs, () => this.#options.outbox.reschedule(entry.seq, attempts, nextAttemptMs, `${reason.code}: ${reason.message}`));
    return false;
  }

  /**
   * Runs a write that records the end of an attempt until the store takes it, while the claim's
   * lease lasts: a store outage (Redis restarting) delays the bookkeeping instead of leaving the
   * entry to be delivered again when its lease runs out. Rethrows once the lease is about to end,
   * or at shutdown (the entry then comes back when its lease runs out: at least once, never lost).
   */
  #persist(entry: OutboxEntry, leaseEndMs: number, write: () => Promise<void>): Promise<void> {
    return retryWhileLeased(write, {
      leaseEndMs,
      signal: this.#abort.signal,
      onFirstRefusal: (err) => this.#options.logger.warn({ err, command: entry.id }, 'the store did not take the end of a command attempt; trying again while its lease lasts'),
    });
  }

  /** Appends the result events, then removes the entry: a crash in between re-delivers (at least once), never loses. */
  async #finish(entry: OutboxEntry, events: CloudEvent[]): Promise<void> {
    if (events.length > 0) await appendTraced(this.#options.log, events.map((event) => ({ backend: entry.backend, event })));
    await this.#options.outbox.complete(entry.seq);
  }

  async #remember(entry: OutboxEntry, leaseEndMs: number, backendId: string): Promise<void> {
    this.#options.logger.warn({ command: entry.id, backend: entry.backend, backendId }, 'backend answered with another command id; its events are found by both');
    await this.#persist(entry, leaseEndMs, () => this.#options.aliases.rememberAlias(entry.id, backendId));
  }

  #fail(entry: OutboxEntry, reason: FailureReason): void {
    this.#options.metrics.countFailure(entry.backend);
    this.#options.logger.warn({ command: entry.id, backend: entry.backend, code: reason.code, status: reason.status, reason: reason.message }, 'command failed');
  }

  #observe(entry: OutboxEntry, outcome: AttemptOutcome, startedMs: number): void {
    this.#options.metrics.observeAttempt(entry.backend, outcome, (performance.now() - startedMs) / 1000);
  }
}

/** The `Retry-After` a thrown refusal carries (an open circuit says when it lets a probe through). */
function retryAfterOf(err: unknown): { retryAfterMs?: number } {
  const retryAfterMs = parseRetryAfter((err as { headers?: Record<string, string> })?.headers?.['Retry-After']);
  return retryAfterMs === undefined ? {} : { retryAfterMs };
}

/** A thrown attempt as a failure reason (the adapters throw catalogued errors for transport failures). */
function reasonOf(err: unknown): FailureReason {
  const code = (err as { code?: unknown })?.code;
  return { code: typeof code === 'string' && /^[A-Z_]+$/.test(code) ? code : 'BACKEND_UNAVAILABLE', message: (err as Error)?.message ?? String(err) };
}
