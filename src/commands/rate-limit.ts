/**
 * The per-principal rate limit of command ingestion (`commands.rateLimit`): a token bucket per
 * principal that refills at `perSecond` tokens a second up to `burst` tokens (`burst` 0 = one
 * second's worth). `perSecond` 0 turns it off. A refused command is a 429 `RATE_LIMITED` whose
 * `Retry-After` says when one token will be back (RFC 9110 §10.2.3, whole seconds, at least 1).
 * `RateLimiter` keeps the buckets in process memory (one replica); `redis-rate-limit.ts` keeps them
 * in Redis, shared by every replica.
 */
import { ProtoError } from '../errors.ts';

/** At most this many principals are tracked; when full, the buckets that are full again are dropped. */
export const MAX_TRACKED_PRINCIPALS = 10_000;

interface Bucket {
  tokens: number;
  updatedMs: number;
}

/** A per-principal rate limit, wherever its buckets live. */
export interface PrincipalRateLimit {
  /** True when the limit is on. */
  readonly enabled: boolean;
  /** Takes one token of `principal`'s bucket, or throws 429 `RATE_LIMITED` with `Retry-After`. */
  take(principal: string): void | Promise<void>;
  /** Takes new limits (a configuration reload); `perSecond: 0` turns the limit off. */
  reconfigure(options: Pick<RateLimitOptions, 'perSecond' | 'burst'>): void;
  /** Releases what the buckets hold on to (a connection). Safe to call twice. */
  close(): Promise<void>;
}

/** Options of a `RateLimiter`. */
export interface RateLimitOptions {
  /** Tokens added per second; 0 disables the limit. */
  perSecond: number;
  /** Bucket size; 0 = `max(1, perSecond)`. */
  burst: number;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

/** Tokens a bucket holds at most: `burst`, or `max(1, perSecond)` when `burst` is 0. */
export function bucketCapacity(options: Pick<RateLimitOptions, 'perSecond' | 'burst'>): number {
  return options.burst > 0 ? options.burst : Math.max(1, options.perSecond);
}

/** The 429 of a principal whose bucket holds `tokens` (< 1), refilled at `perMs` tokens a millisecond. */
export function rateLimited(tokens: number, perMs: number): ProtoError {
  const retryAfter = Math.max(1, Math.ceil((1 - tokens) / perMs / 1000));
  return new ProtoError('RATE_LIMITED', `too many commands; retry in ${retryAfter} s`, { retryAfterSeconds: retryAfter }, { 'Retry-After': String(retryAfter) });
}

/** Token buckets by principal, in process memory. */
export class RateLimiter implements PrincipalRateLimit {
  #perMs: number;
  #capacity: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(options: RateLimitOptions) {
    this.#perMs = options.perSecond / 1000;
    this.#capacity = bucketCapacity(options);
    this.#now = options.now ?? Date.now;
  }

  /** True when the limit is on. */
  get enabled(): boolean {
    return this.#perMs > 0;
  }

  /** Takes new limits (a reload): each bucket refills at the new rate, up to the new capacity, from its next take. */
  reconfigure(options: Pick<RateLimitOptions, 'perSecond' | 'burst'>): void {
    this.#perMs = options.perSecond / 1000;
    this.#capacity = bucketCapacity(options);
  }

  /** Takes one token of `principal`'s bucket, or throws 429 `RATE_LIMITED` with `Retry-After`. */
  take(principal: string): void {
    if (!this.enabled) return;
    const now = this.#now();
    const bucket = this.#bucket(principal, now);
    if (bucket.tokens < 1) throw rateLimited(bucket.tokens, this.#perMs);
    bucket.tokens -= 1;
  }

  async close(): Promise<void> {}

  #bucket(principal: string, now: number): Bucket {
    let bucket = this.#buckets.get(principal);
    if (!bucket) {
      if (this.#buckets.size >= MAX_TRACKED_PRINCIPALS) this.#dropFullBuckets(now);
      bucket = { tokens: this.#capacity, updatedMs: now };
      this.#buckets.set(principal, bucket);
      return bucket;
    }
    bucket.tokens = Math.min(this.#capacity, bucket.tokens + (now - bucket.updatedMs) * this.#perMs);
    bucket.updatedMs = now;
    return bucket;
  }

  /** A full bucket is the same as no bucket: forgetting it changes nothing. */
  #dropFullBuckets(now: number): void {
    for (const [principal, bucket] of this.#buckets) {
      if (bucket.tokens + (now - bucket.updatedMs) * this.#perMs >= this.#capacity) this.#buckets.delete(principal);
    }
    // Everyone is mid-burst: drop the oldest rather than grow without bound.
    if (this.#buckets.size >= MAX_TRACKED_PRINCIPALS) this.#buckets.delete(this.#buckets.keys().next().value!);
  }
}
