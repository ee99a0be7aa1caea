/**
 * One writer thread at a time owns a SQLite command store file (`sqlite-writer-thread.ts`): it
 * alone indexes the newest records, in its memory, so a second writer on the same file (another
 * process) would not see ids the first holds.
 *
 * Each writer thread that opens the file takes it over: a new epoch in `command_store_writer`, and
 * the records above `merged_through` indexed in its memory, in one transaction. Every later
 * transaction of the thread checks the epoch first (`claimFile`): a thread whose epoch is gone
 * writes nothing more (`StoreTakenOver`) instead of accepting an id the other holds. The owner
 * beats (`beat` + 1) at least every `BEAT_MS`; a thread that lost the file watches the beat and
 * takes the file back once it has not moved for `STALE_BEATS` beats (the process that took it was a
 * passing one: a second gateway that failed to start, a crash loop), so a running gateway is not
 * left refusing commands for good.
 */
import { RecentIds } from './recent-ids.ts';
import type { Statements, WriterState } from './sqlite-command-sql.ts';

/** The owner beats at least this often, in ms (a transaction of its own when none ran meanwhile). */
export const BEAT_MS = 2_000;

/** A file whose owner has not beaten for this many beats is taken back by a thread that lost it (20 s). */
export const STALE_BEATS = 10;

/** The code of `StoreTakenOver`, as it crosses to the event loop. */
export const STORE_TAKEN_OVER = 'STORE_TAKEN_OVER';

/** Another writer thread (another process, most likely) opened the file since this one did. */
export class StoreTakenOver extends Error {
  readonly code = STORE_TAKEN_OVER;
  constructor() {
    super('another process opened the store file and writes it now');
  }
}

/** The writer's state on the file, its epoch, and when it last beat (`performance.now()`). */
export interface OwnedState extends WriterState {
  epoch: number;
  beatAt: number;
}

/** In the caller's transaction: takes the file over (a new epoch) and indexes in memory the records not merged. */
export function takeOver(sql: Statements): OwnedState {
  const { epoch, merged_through: mergedThrough } = sql.takeOver.get() as { epoch: number; merged_through: number };
  const recent = new RecentIds();
  for (const row of sql.unmerged.iterate(mergedThrough)) recent.add(row.id_hash as number, row.rec as number);
  const last = sql.lastRec.get()!.rec as number;
  return { sql, recent, merging: undefined, nextRec: Math.max(last, mergedThrough) + 1, epoch, beatAt: performance.now() };
}

/**
 * In the caller's transaction, first: throws `StoreTakenOver` unless the file's epoch is still
 * `state.epoch`; moves `nextRec` above any record another process appended since (a build before
 * this one, on the same file: its records are in the id index already, by `command_records_indexed`);
 * beats when `beatMs` has passed.
 */
export function claimFile(state: OwnedState, beatMs = BEAT_MS): void {
  const { sql } = state;
  if (sql.epoch.get()!.epoch !== state.epoch) throw new StoreTakenOver();
  const last = sql.lastRec.get()!.rec as number;
  if (last >= state.nextRec) state.nextRec = last + 1;
  const now = performance.now();
  if (now - state.beatAt >= beatMs) {
    sql.beat.run();
    state.beatAt = now;
  }
}

/** Whether the owner of a file has stopped: told its epoch and beat every so often, true once they have not changed for `staleMs`. */
export class OwnerWatch {
  readonly #staleMs: number;
  #seen = '';
  #since = 0;

  constructor(staleMs: number) {
    this.#staleMs = staleMs;
  }

  stale(epoch: number, beat: number, now = performance.now()): boolean {
    const seen = `${epoch}:${beat}`;
    if (seen !== this.#seen) {
      this.#seen = seen;
      this.#since = now;
      return false;
    }
    return now - this.#since >= this.#staleMs;
  }
}
