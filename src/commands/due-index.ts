/**
 * The memory store's outbox entries of one backend in due order (next attempt, then seq): a binary
 * min-heap, so a claim takes its entries and `nextDueMs` reads the earliest in O(log n) instead of
 * a pass over the whole outbox (under commands-e2e the memory store's outbox held ~5,000 entries
 * while the dispatcher's lane was full, and each claim and each look at the next due time walked
 * them all).
 *
 * An entry whose due time changes (a claim's lease, a reschedule) is pushed again; its old place is
 * left in the heap and skipped when it surfaces (the entry records its current place). Left places
 * are dropped in one rebuild once they outnumber the live ones, so the heap stays within twice the
 * entries plus a constant. The heap itself is tinyqueue's (as the webhook queue's schedule).
 */
import TinyQueue from 'tinyqueue';

/** What the index orders: the outbox entry's seq and when it is due. */
export interface DueItem {
  readonly seq: number;
  nextAttemptMs: number;
}

/** One place in the heap: the item and the due time it was pushed with. */
interface Place<T extends DueItem> {
  item: T;
  dueMs: number;
}

/** Rebuilds are not worth it below this many places. */
const MIN_REBUILD = 64;

/** Items of one backend by (due time, seq). */
export class DueIndex<T extends DueItem> {
  #heap = new TinyQueue<Place<T>>([], byDue);
  /** The current place of each item in the index, by seq. */
  readonly #places = new Map<number, Place<T>>();

  /** Number of items (not places). */
  get size(): number {
    return this.#places.size;
  }

  /** Adds `item` at its `nextAttemptMs`, or moves it there when it is in already. */
  put(item: T): void {
    const place = { item, dueMs: item.nextAttemptMs };
    this.#places.set(item.seq, place);
    this.#heap.push(place);
    if (this.#heap.length > MIN_REBUILD && this.#heap.length > 2 * this.#places.size) this.#rebuild();
  }

  /** Removes the item with `seq` (its place is skipped from now on). */
  delete(seq: number): void {
    this.#places.delete(seq);
    if (this.#places.size === 0) this.#heap = new TinyQueue<Place<T>>([], byDue);
  }

  /** The earliest due time, or undefined when empty. */
  earliestMs(): number | undefined {
    return this.#top()?.dueMs;
  }

  /**
   * Up to `limit` items due at `nowMs`, earliest first (then by seq), taken out of the index: the
   * caller puts each back (`put`) with its new due time or deletes it.
   */
  take(nowMs: number, limit: number): T[] {
    const taken: T[] = [];
    for (let top = this.#top(); top && top.dueMs <= nowMs && taken.length < limit; top = this.#top()) {
      this.#heap.pop();
      this.#places.delete(top.item.seq);
      taken.push(top.item);
    }
    return taken;
  }

  /** The top place, after dropping places left behind by a move or a delete. */
  #top(): Place<T> | undefined {
    for (let top = this.#heap.peek(); top; top = this.#heap.peek()) {
      if (this.#places.get(top.item.seq) === top) return top;
      this.#heap.pop();
    }
    return undefined;
  }

  #rebuild(): void {
    this.#heap = new TinyQueue(this.#heap.data.filter((place) => this.#places.get(place.item.seq) === place), byDue);
  }
}

/** Due order: earlier due time first, then lower seq. */
function byDue<T extends DueItem>(a: Place<T>, b: Place<T>): number {
  return a.dueMs - b.dueMs || a.item.seq - b.item.seq;
}
