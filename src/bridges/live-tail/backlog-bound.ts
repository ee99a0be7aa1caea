/**
 * The byte bound of one subscriber's backlog (`sse.maxBufferedBytes`), the same rule on every push
 * transport (SSE, gRPC, MCP, A2A): it bounds what a subscriber leaves unread, never one event. An
 * event larger than the bound is still delivered (live and in replay); while it is unread, the
 * backlog may exceed the bound by that event's size, and no more. So a client that keeps up gets
 * every event, a 1.1 MB event among them, and a client that stops reading is still dropped once it
 * leaves more than the bound behind that event.
 */
export class BacklogBound {
  readonly #max: number;
  /** Size of the largest over-bound event written since the backlog was last empty. */
  #allowance = 0;

  /** `maxBytes`: the bound, in bytes. */
  constructor(maxBytes: number) {
    this.#max = maxBytes;
  }

  /** True when a frame of `size` bytes may join `unread` unread bytes (false: the subscriber is too slow). */
  admits(unread: number, size: number): boolean {
    if (unread === 0) {
      this.#allowance = 0;
      return true;
    }
    return unread + size <= this.#max + this.#allowance;
  }

  /** A frame of `size` bytes was written. */
  wrote(size: number): void {
    if (size > this.#max && size > this.#allowance) this.#allowance = size;
  }

  /** The subscriber has read everything written. */
  emptied(): void {
    this.#allowance = 0;
  }
}
