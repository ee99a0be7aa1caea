/**
 * Batched outcome writes (issue 11): attempts that end while a write is in flight are recorded
 * together by the next one, and the same write claims the deliveries that take their slots
 * (`DeliveryQueue.settle`: one transaction on SQLite, one script on Redis). Each attempt is answered
 * only after the write that holds its outcome, so its slot is reused only once the outcome is
 * written.
 *
 * Batch size (issue 28): a write costs about as much for one outcome as for eight (on SQLite a
 * transaction's commit is 60-100 us of system calls, a row's update 3-8 us), and with many
 * attempts in flight their answers arrive a few per turn. So a write waits until `BATCH_SHARE` of
 * the attempts in flight have ended, or `MAX_BATCH_WAIT_MS` after its first outcome, whichever
 * comes first, and for at least `MIN_BATCH` outcomes while as many attempts are in flight: a single
 * subscription's four attempts (claimed together, so ending together) share one write, where they
 * took one each at first and two since. A lone attempt (an idle queue) waits for nothing: its
 * outcome is written in the next turn of the event loop.
 */
import type { ClaimedDelivery, DeliveryQueue, FinishedAttempt } from './DeliveryQueue.ts';

/** How a write refills the slots its outcomes free. */
export interface Refill {
  /** Lease of what is claimed, ms. */
  leaseMs: number;
  /** How many deliveries to claim in a write that records `ending` outcomes. */
  limit(ending: number): number;
  /** Takes what a write claimed; the ended attempts are answered once it resolves. */
  claimed(deliveries: ClaimedDelivery[]): Promise<void>;
  /** Attempts in flight now, those whose outcomes wait included (sizes the batches). */
  inFlight(): number;
}

/** Longest an outcome waits for others to share its write, ms. */
export const MAX_BATCH_WAIT_MS = 2;

/** A write waits for the outcomes of this share of the attempts in flight (or `MAX_BATCH_WAIT_MS`). */
export const BATCH_SHARE = 1 / 8;

/** A write waits for this many outcomes (or `MAX_BATCH_WAIT_MS`) while at least as many attempts are in flight. */
export const MIN_BATCH = 4;

/** Most outcomes in one write. */
export const MAX_OUTCOMES_PER_WRITE = 256;

interface Waiting {
  attempt: FinishedAttempt;
  nowMs: number;
  resolve(recorded: boolean): void;
  reject(err: unknown): void;
}

/** Batches outcome writes (and the claims that refill their slots) on one queue. */
export class OutcomeWriter {
  readonly #queue: Pick<DeliveryQueue, 'settle'>;
  readonly #refill: Refill;
  readonly #waiting: Waiting[] = [];
  #writing = false;
  /** The wait for more outcomes to share a write, while one is pending. */
  #timer: NodeJS.Timeout | undefined;

  constructor(queue: Pick<DeliveryQueue, 'settle'>, refill: Refill) {
    this.#queue = queue;
    this.#refill = refill;
  }

  /** Records one outcome; resolves once the write holding it is durable: true if recorded, false if the claim was no longer current. */
  record(attempt: FinishedAttempt, nowMs: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ attempt, nowMs, resolve, reject });
      if (this.#writing) return;
      if (this.#waiting.length >= batchSize(this.#refill.inFlight())) {
        clearTimeout(this.#timer);
        this.#timer = undefined;
        this.#writing = true;
        // Not a timer: the answers read in this turn of the event loop reach this point first. A
        // synchronous store (node:sqlite) blocks the loop while it commits, so without this turn
        // every write would hold one outcome.
        setImmediate(() => void this.#writeAll());
      } else {
        this.#timer ??= setTimeout(() => {
          this.#timer = undefined;
          if (this.#writing || this.#waiting.length === 0) return;
          this.#writing = true;
          void this.#writeAll();
        }, MAX_BATCH_WAIT_MS);
      }
    });
  }

  async #writeAll(): Promise<void> {
    try {
      while (this.#waiting.length > 0) await this.#write(this.#waiting.splice(0, MAX_OUTCOMES_PER_WRITE));
    } finally {
      this.#writing = false;
    }
  }

  async #write(batch: Waiting[]): Promise<void> {
    try {
      const nowMs = Math.max(...batch.map((w) => w.nowMs));
      const settled = await this.#queue.settle(batch.map((w) => w.attempt), nowMs, this.#refill.limit(batch.length), this.#refill.leaseMs);
      await this.#refill.claimed(settled.claimed);
      batch.forEach((w, i) => w.resolve(settled.recorded[i]!));
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}

/** Outcomes a write waits for with `inFlight` attempts in flight (those whose outcomes wait included). */
function batchSize(inFlight: number): number {
  return Math.max(Math.min(MIN_BATCH, inFlight), Math.floor(inFlight * BATCH_SHARE));
}
