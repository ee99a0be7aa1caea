/**
 * One backend's lane in the dispatcher (`dispatcher.ts`): the outbox entries it holds in flight,
 * and the slots they take of `commands.dispatch.concurrency`. A slot is taken by a backend call in
 * flight and by a commit in flight that claims an entry at accept (reserved); an entry whose call
 * is over while its outcome is written (settling) stays in the lane, so no claim takes it twice,
 * but frees its slot (on SQLite that write waits for a commit of a few ms), up to as many settling
 * as the concurrency: beyond that a store that cannot keep up slows the calls down instead of
 * piling finished attempts up in memory.
 */
export class Lane {
  /** The seqs of the entries in flight (calls and settling ones). */
  readonly seqs = new Set<number>();
  readonly concurrency: number;
  #reserved = 0;
  #settling = 0;

  constructor(concurrency: number) {
    this.concurrency = concurrency;
  }

  /** Slots free for another entry. */
  get free(): number {
    const calls = this.seqs.size - this.#settling;
    return Math.min(this.concurrency - calls, 2 * this.concurrency - this.seqs.size) - this.#reserved;
  }

  /** Nothing in flight and nothing reserved: the lane of a removed backend can go. */
  get empty(): boolean {
    return this.seqs.size === 0 && this.#reserved === 0;
  }

  /** Reserves `slots` (a claim or a commit in flight will fill them). */
  reserve(slots: number): void {
    this.#reserved += slots;
  }

  /** Gives back `slots` reserved. */
  unreserve(slots: number): void {
    this.#reserved = Math.max(0, this.#reserved - slots);
  }

  /** Counts `delta` more (1) or fewer (-1) entries settling. */
  settle(delta: 1 | -1): void {
    this.#settling += delta;
  }
}
