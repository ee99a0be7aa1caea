/**
 * Retry delays of the ingestors: exponential from the poll interval up to a ceiling, with jitter so
 * that many ingestors failing together (a backend restart) do not retry in lock-step.
 */

/** Default ceiling of a backoff delay, in milliseconds. */
export const DEFAULT_MAX_BACKOFF_MS = 30_000;

/**
 * The delay before retry `attempt` (1 = after the first failure): `min(maxMs, baseMs · 2^(attempt-1))`
 * with "equal jitter" — half of it fixed, half uniformly random — so it never drops below half
 * the exponential value. `random` returns a number in [0, 1).
 */
export function backoffDelay(attempt: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exponent = Math.min(Math.max(attempt - 1, 0), 30);
  const capped = Math.min(maxMs, Math.max(baseMs, 1) * 2 ** exponent);
  return Math.round(capped / 2 + random() * (capped / 2));
}
