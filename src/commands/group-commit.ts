/**
 * Group commit of accepted commands (issue 11): accepts that arrive while a commit is in flight
 * are written together by the next one (`CommandStore.acceptBatch`: one durable commit for the
 * batch), and each caller is answered after the commit that holds its command. An idle store is
 * never made to wait for a timer: the first accept commits in the next turn of the event loop,
 * with whatever arrived in the same turn; what queues during a commit goes into the next one. A batch is bounded by count and by bytes; the rest waits for the next one.
 */
import type { AcceptItem, CommandStore, IdempotencyRecord } from './CommandStore.ts';

/** Most commands in one commit. */
export const MAX_BATCH_COUNT = 256;
/** Most bytes (JSON of the envelopes) in one commit. */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;

interface Pending extends AcceptItem {
  nowMs: number;
  bytes: number;
  resolve(holder: IdempotencyRecord | undefined): void;
  reject(err: unknown): void;
}

/** Batches `accept` calls into group commits on one store. */
export class GroupCommitter {
  readonly #store: Pick<CommandStore, 'acceptBatch'>;
  readonly #queue: Pending[] = [];
  #committing = false;

  constructor(store: Pick<CommandStore, 'acceptBatch'>) {
    this.#store = store;
  }

  /** As `CommandStore.accept`, resolved once the commit holding this command is durable. */
  accept(record: IdempotencyRecord, entry: AcceptItem['entry'], nowMs: number): Promise<IdempotencyRecord | undefined> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ record, entry, nowMs, bytes: JSON.stringify(entry.command).length, resolve, reject });
      if (this.#committing) return;
      this.#committing = true;
      // Not a timer: the commit starts right after the requests this turn of the event loop has
      // read reach this point. A synchronous store (node:sqlite) blocks the loop while it commits, so
      // without this turn every commit would hold one command.
      setImmediate(() => void this.#commitAll());
    });
  }

  async #commitAll(): Promise<void> {
    try {
      while (this.#queue.length > 0) await this.#commit(this.#nextBatch());
    } finally {
      this.#committing = false;
    }
  }

  #nextBatch(): Pending[] {
    let bytes = 0;
    let count = 0;
    while (count < this.#queue.length && count < MAX_BATCH_COUNT && (count === 0 || bytes + this.#queue[count].bytes <= MAX_BATCH_BYTES)) {
      bytes += this.#queue[count].bytes;
      count++;
    }
    return this.#queue.splice(0, count);
  }

  async #commit(batch: Pending[]): Promise<void> {
    try {
      // One clock for the batch: the latest arrival's (no record may expire between two items).
      const nowMs = Math.max(...batch.map((item) => item.nowMs));
      const answers = await this.#store.acceptBatch(batch, nowMs);
      batch.forEach((item, i) => item.resolve(answers[i]));
    } catch (err) {
      for (const item of batch) item.reject(err);
    }
  }
}
