/**
 * Batched outcome writes (issue 11): attempts that end while a write is in flight are recorded
 * together by the next one (`DeliveryQueue.finish`: one transaction on SQLite, one script on
 * Redis), and each attempt is answered only after the write that holds its outcome, so its slot is
 * reused only once the outcome is durable. An idle queue is never made to wait for a timer: the
 * first outcome is written in the next turn of the event loop, with whatever ended in that turn.
 */
import type { DeliveryQueue, FinishedAttempt } from './DeliveryQueue.ts';

/** Most outcomes in one write. */
export const MAX_OUTCOMES_PER_WRITE = 256;

interface Waiting {
  attempt: FinishedAttempt;
  nowMs: number;
  resolve(recorded: boolean): void;
  reject(err: unknown): void;
}

/** Batches `DeliveryQueue.finish` calls on one queue. */
export class OutcomeWriter {
  readonly #queue: Pick<DeliveryQueue, 'finish'>;
  readonly #waiting: Waiting[] = [];
  #writing = false;

  constructor(queue: Pick<DeliveryQueue, 'finish'>) {
    this.#queue = queue;
  }

  /** Records one outcome; resolves once the write holding it is durable: true if recorded, false if the claim was no longer current. */
  record(attempt: FinishedAttempt, nowMs: number): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.#waiting.push({ attempt, nowMs, resolve, reject });
      if (this.#writing) return;
      this.#writing = true;
      // Not a timer: the answers read in this turn of the event loop reach this point first. A
      // synchronous store (node:sqlite) blocks the loop while it commits, so without this turn
      // every write would hold one outcome.
      setImmediate(() => void this.#writeAll());
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
      const recorded = await this.#queue.finish(batch.map((w) => w.attempt), Math.max(...batch.map((w) => w.nowMs)));
      batch.forEach((w, i) => w.resolve(recorded[i]!));
    } catch (err) {
      for (const w of batch) w.reject(err);
    }
  }
}
