/**
 * Group commit of accepted commands (issue 11): accepts that arrive while a commit is in flight
 * are written together by the next one (`CommandStore.acceptBatch`: one durable commit for the
 * batch), and each caller is answered after the commit that holds its command. An idle store is
 * never made to wait for a timer: the first accept commits in the next turn of the event loop,
 * with whatever arrived in the same turn; what queues during a commit goes into the next one. A batch is bounded by count and by bytes; the rest waits for the next one.
 *
 * Gathering after a slow commit (issue 29): clients answered by a commit send their next commands
 * a moment later, just after the next commit has left without them, and so wait for it and then for
 * their own: under a steady load the callers split into two cohorts, each paying two commits. After
 * a commit of `GATHER_MIN_BATCH` or more that took `d` ms, the next batch waits for the callers
 * just answered to come back (as many accepts as that commit held plus those already waiting), at
 * most min(`d` / 2, `GATHER_MAX_MS`) ms: one fsync for the whole load instead of two, fewer commits
 * per command. A fast commit (memory store) and a small one (a lone client) never wait; every 201
 * is still answered only after the commit that holds it.
 *
 * Claim at accept (issue 29): with a `handoff` (the local dispatcher), each commit also claims, for
 * as many of its new entries as the dispatcher has free slots for, the entry itself (leased, in the
 * same write), and hands the claimed entries to the dispatcher in memory once the commit is
 * durable: no second write and no read to claim them. A crash after the commit leaves them to come
 * back when their lease runs out (re-delivered, never lost).
 */
import type { AcceptAnswer, AcceptItem, CommandStore, IdempotencyRecord, OutboxEntry } from './CommandStore.ts';

/** A commit of fewer commands than this is not gathered after (a lone or slow client does not wait). */
export const GATHER_MIN_BATCH = 4;
/** Longest wait, in ms, for the callers a commit answered to come back before the next commit. */
export const GATHER_MAX_MS = 3;

/** Most commands in one commit. */
export const MAX_BATCH_COUNT = 256;
/** Most bytes (JSON of the envelopes) in one commit. */
export const MAX_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * The local dispatcher, as the group commit hands it the entries it claims at accept
 * (`Dispatcher` implements it).
 */
export interface AcceptHandoff {
  /** The lease of a claim, in ms. */
  readonly leaseMs: number;
  /** Reserves up to `wanted` slots of `backend`'s lane for entries the coming commit claims; returns how many it got (0 when it takes none). */
  reserve(backend: string, wanted: number): number;
  /**
   * After the commit: the entries it claimed for `backend` (each with its seq), claimed at
   * `claimedMs`, go into the lane; the rest of the `reserved` slots are given back. With no
   * entries (the commit failed, or held ids), only gives the slots back.
   */
  handOver(backend: string, entries: OutboxEntry[], reserved: number, claimedMs: number): void;
}

/** How the group commit answered one accept. */
export type CommittedAccept = { holder: IdempotencyRecord } | { seq: number; claimed: boolean };

interface Pending extends AcceptItem {
  nowMs: number;
  bytes: number;
  resolve(answer: CommittedAccept): void;
  reject(err: unknown): void;
}

/** Batches `accept` calls into group commits on one store. */
export class GroupCommitter {
  readonly #store: Pick<CommandStore, 'acceptBatch'>;
  readonly #handoff: AcceptHandoff | undefined;
  readonly #queue: Pending[] = [];
  #committing = false;
  /** While the next batch waits for callers to come back: how many accepts end the wait, and how to end it. */
  #gathering: { want: number; done(): void } | undefined;

  /** @param handoff the local dispatcher, to claim new entries for at accept; absent: entries are enqueued unclaimed. */
  constructor(store: Pick<CommandStore, 'acceptBatch'>, handoff?: AcceptHandoff) {
    this.#store = store;
    this.#handoff = handoff;
  }

  /** As `CommandStore.accept`, resolved once the commit holding this command is durable: the holder of the id, or the new entry's seq and whether it was claimed for the local dispatcher. */
  accept(record: IdempotencyRecord, entry: AcceptItem['entry'], nowMs: number): Promise<CommittedAccept> {
    return new Promise((resolve, reject) => {
      // Serialised once: its length bounds the batch, and the store writes this text as it is.
      const commandJson = JSON.stringify(entry.command);
      this.#queue.push({ record, entry, commandJson, nowMs, bytes: commandJson.length, resolve, reject });
      if (this.#gathering && this.#queue.length >= this.#gathering.want) this.#gathering.done();
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
      while (this.#queue.length > 0) {
        const batch = this.#nextBatch();
        const startedMs = performance.now();
        await this.#commit(batch);
        const waitMs = Math.min(GATHER_MAX_MS, (performance.now() - startedMs) / 2);
        if (batch.length >= GATHER_MIN_BATCH && waitMs >= 1) await this.#gather(batch.length + this.#queue.length, waitMs);
      }
    } finally {
      this.#committing = false;
    }
  }

  /** Resolves once `want` accepts are queued, or after `waitMs`. */
  #gather(want: number, waitMs: number): Promise<void> {
    if (this.#queue.length >= want) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.#gathering?.done(), waitMs);
      this.#gathering = {
        want,
        done: () => {
          clearTimeout(timer);
          this.#gathering = undefined;
          resolve();
        },
      };
    });
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
    // One clock for the batch: the latest arrival's (no record may expire between two items).
    const nowMs = Math.max(...batch.map((item) => item.nowMs));
    const reserved = this.#reserve(batch);
    let answers: AcceptAnswer[];
    try {
      answers = await this.#store.acceptBatch(batch, nowMs);
    } catch (err) {
      for (const [backend, slots] of reserved) this.#handoff!.handOver(backend, [], slots, nowMs);
      for (const item of batch) item.reject(err);
      return;
    }
    this.#handOver(batch, answers, reserved, nowMs);
    batch.forEach((item, i) => {
      const answer = answers[i];
      item.resolve('holder' in answer ? answer : { seq: answer.seq, claimed: item.leaseMs !== undefined });
    });
  }

  /** Marks as many items as the dispatcher has slots for to be claimed in the commit; returns the slots reserved per backend. */
  #reserve(batch: Pending[]): Map<string, number> {
    const reserved = new Map<string, number>();
    const handoff = this.#handoff;
    if (!handoff) return reserved;
    const wanted = new Map<string, number>();
    for (const item of batch) wanted.set(item.entry.backend, (wanted.get(item.entry.backend) ?? 0) + 1);
    for (const [backend, count] of wanted) {
      const granted = handoff.reserve(backend, count);
      if (granted > 0) reserved.set(backend, granted);
    }
    const left = new Map(reserved);
    // A repeat of an id earlier in the batch is answered with that item's record: no slot for it.
    const ids = new Set<string>();
    for (const item of batch) {
      const slots = left.get(item.entry.backend) ?? 0;
      if (slots === 0 || ids.has(item.record.id)) continue;
      ids.add(item.record.id);
      item.leaseMs = handoff.leaseMs;
      left.set(item.entry.backend, slots - 1);
    }
    return reserved;
  }

  /** Hands the entries claimed in the commit to the dispatcher, per backend, and gives back the slots not used (held ids). */
  #handOver(batch: Pending[], answers: AcceptAnswer[], reserved: Map<string, number>, claimedMs: number): void {
    if (reserved.size === 0) return;
    const claimed = new Map<string, OutboxEntry[]>();
    batch.forEach((item, i) => {
      const answer = answers[i];
      if (item.leaseMs === undefined || 'holder' in answer) {
        // A held id wrote nothing: its slot goes back unused.
        item.leaseMs = undefined;
        return;
      }
      const list = claimed.get(item.entry.backend) ?? [];
      list.push({ ...item.entry, seq: answer.seq });
      claimed.set(item.entry.backend, list);
    });
    for (const [backend, slots] of reserved) this.#handoff!.handOver(backend, claimed.get(backend) ?? [], slots, claimedMs);
  }
}
