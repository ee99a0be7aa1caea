/**
 * Redis's clock for the times a Redis store keeps (leases, due times): every replica's times are
 * translated into Redis's before they are stored or compared, so a replica whose clock runs ahead
 * never finds another replica's live lease run out, and one that runs behind never holds a lease
 * longer than it should (DESIGN.md, Storage: "leases are scored by Redis's clock").
 *
 * The offset between this process's clock and Redis's is read from `TIME`, at open and inside every
 * claim script (which returns it), and bracketed by the local clock before and after the call: the
 * true offset lies between the two. The offset in use changes only when it falls outside that
 * bracket by more than `OFFSET_TOLERANCE_MS` (a clock step, NTP), so round-trip jitter never moves
 * it: times translated in one call and compared in a later one stay exact.
 *
 * Callers keep passing their own `nowMs` (the ports' contract); the store translates it with
 * `toRedis` and translates what it reads back with `fromRedis`.
 */

/** How far the measured offset may stray before it is taken, in ms (network and scheduling jitter). */
export const OFFSET_TOLERANCE_MS = 1_000;

/** This process's clock as seen from Redis. */
export class RedisClock {
  readonly #clock: () => number;
  /** Redis's time minus this process's, in ms. */
  #offsetMs = 0;

  /** @param clock this process's clock, epoch ms; default `Date.now` (tests inject a skewed one). */
  constructor(clock: () => number = Date.now) {
    this.#clock = clock;
  }

  /** This process's time now, epoch ms. */
  now(): number {
    return this.#clock();
  }

  /** A time of this process's clock, in Redis's clock. */
  toRedis(ms: number): number {
    return ms + this.#offsetMs;
  }

  /** A time of Redis's clock, in this process's clock. */
  fromRedis(ms: number): number {
    return ms - this.#offsetMs;
  }

  /**
   * Learns from one reading of Redis's `TIME` (`redisMs`) taken between the local readings
   * `beforeMs` and `afterMs`: the offset moves only when it falls outside what they allow by more
   * than the tolerance. The first reading always sets it.
   */
  observe(redisMs: number, beforeMs: number, afterMs: number, first = false): void {
    const low = redisMs - afterMs;
    const high = redisMs - beforeMs;
    if (first || this.#offsetMs < low - OFFSET_TOLERANCE_MS || this.#offsetMs > high + OFFSET_TOLERANCE_MS) this.#offsetMs = Math.round((low + high) / 2);
  }

  /** Reads `TIME` with `time` (the reply of Redis's TIME: seconds and microseconds) and learns from it. */
  async measure(time: () => Promise<Array<string | number>>, first = false): Promise<void> {
    const before = this.#clock();
    const [seconds, micros] = await time();
    this.observe(Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), before, this.#clock(), first);
  }
}
