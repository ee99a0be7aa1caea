/**
 * The merge of the records the SQLite store's writer thread indexes in its memory
 * (`recent-ids.ts`) into `command_record_ids` on disk (`sqlite-writer-thread.ts`).
 *
 * Merging: once `mergeAt` records are indexed in memory, that index is set aside (a new one takes
 * the next records), its hashes are cut into key ranges of about `MERGE_CHUNK`, and a range is
 * merged per transaction, sorted: a narrow range dirties few leaves. The last moves
 * `merged_through` up, and only then is the index set aside dropped. A merge that a
 * crash cuts short is done again from the records (`INSERT OR IGNORE`); its transactions only
 * index what is already durable, so they commit without an fsync.
 */
import { RecentIds } from './recent-ids.ts';
import type { WriterState } from './sqlite-command-sql.ts';

/**
 * Records indexed in memory before a merge starts: 2^19 slots of 16 bytes (8 MiB); while the merge
 * runs, a second index takes the records that come meanwhile (16 MiB in all at most).
 */
export const MERGE_AT = 250_000;

/** Hashes merged per transaction, about (a key range each: about 2.4 ms of the writer thread). */
export const MERGE_CHUNK = 1024;

/** Most key ranges a merge is cut into. */
const MAX_PARTS = 2 ** 20;

/** The share of the time merge steps hold the file's write lock, at most. */
const MERGE_SHARE = 0.25;

/** After a merge transaction failed, the next merge waits this long, in ms. */
const MERGE_RETRY_MS = 1_000;

interface Running {
  /** Every hash to merge (a hash may repeat), key range after key range (`RecentIds.parts`). */
  hashes: Float64Array;
  /** Where each key range starts in `hashes` (and where the last ends). */
  starts: Uint32Array;
  /** The records merged: rowids up to this one. */
  through: number;
  /** How many key ranges are merged. */
  done: number;
}

/** The merge of the records indexed in memory into `command_record_ids`, a key range per transaction. */
export class IdMerge {
  readonly #state: WriterState;
  readonly #mergeAt: number;
  #running: Running | undefined;
  /** The last rowid of the records set aside. */
  #through = 0;
  /** When the next step may run (`performance.now()`), and when the last one started. */
  #nextStepAt = 0;
  #stepStarted = 0;
  /** After a failed step, when the merge may try again. */
  #retryAt = 0;

  constructor(state: WriterState, mergeAt = MERGE_AT) {
    this.#state = state;
    this.#mergeAt = mergeAt;
  }

  /**
   * In how many ms the next step may run (0: now), or undefined when there is nothing to merge. A
   * step holds the file's write lock, which the event loop's connection (the event log's appends)
   * waits for, sleeping: so steps leave the lock free `1 / MERGE_SHARE - 1` times as long as they
   * took (back to back, a merge stalled the event loop up to 500 ms), unless the merge is behind.
   */
  waitMs(): number | undefined {
    const { recent, merging } = this.#state;
    if (this.#running === undefined && merging === undefined && recent.size < this.#mergeAt) return undefined;
    const now = performance.now();
    if (now < this.#retryAt) return Math.ceil(this.#retryAt - now);
    // Behind (accepts outrun the paced merge: the next is due already): no pause, so memory stays bounded.
    if (merging !== undefined && recent.size >= this.#mergeAt) return 0;
    return Math.max(0, Math.ceil(this.#nextStepAt - now));
  }

  /** In the caller's transaction: merges the next key range (the first of a new merge when none runs). */
  step(): void {
    this.#stepStarted = performance.now();
    this.#running ??= this.#start();
    const { sql, merging } = this.#state;
    const { hashes, starts, through, done } = this.#running;
    const range = hashes.subarray(starts[done], starts[done + 1]).sort();
    const pairs: Array<[number, number]> = [];
    range.forEach((hash, i) => {
      // One hash's every rowid is merged at its first occurrence.
      if (i > 0 && range[i - 1] === hash) return;
      merging!.find(hash, (rec) => {
        pairs.push([hash, rec]);
        return false;
      });
    });
    sql.mergeIds.run(JSON.stringify(pairs));
    if (done + 1 === starts.length - 1) sql.setMerged.run(through);
  }

  /** The step's transaction committed: after the last, the records merged are forgotten. */
  committed(): void {
    this.#pace();
    const running = this.#running!;
    if (++running.done < running.starts.length - 1) return;
    this.#state.merging = undefined;
    this.#running = undefined;
  }

  /**
   * Sets the records indexed so far aside (new ones go to a new index; a merge that failed goes
   * on with those it had) and cuts their hashes into key ranges of about `MERGE_CHUNK`.
   */
  #start(): Running {
    const state = this.#state;
    if (!state.merging) {
      state.merging = state.recent;
      state.recent = new RecentIds();
      this.#through = state.nextRec - 1;
    }
    let parts = 1;
    while (parts * MERGE_CHUNK < state.merging.size && parts < MAX_PARTS) parts *= 2;
    return { ...state.merging.parts(parts), through: this.#through, done: 0 };
  }

  /** The step's transaction failed: the merge starts again later, with the records set aside (what was merged is merged again, ignored). */
  failed(): void {
    this.#running = undefined;
    this.#retryAt = performance.now() + MERGE_RETRY_MS;
  }

  /** The next step waits so that steps hold the lock `MERGE_SHARE` of the time at most. */
  #pace(): void {
    const now = performance.now();
    this.#nextStepAt = now + (now - this.#stepStarted) * (1 / MERGE_SHARE - 1);
  }
}
