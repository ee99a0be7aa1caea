/**
 * When to try a command again (`commands.dispatch.retry.schedule`): N entries = N retries after the
 * first try. Each delay gets ±20 % jitter, so commands that failed together (a backend restart) do
 * not come back in lock-step, and is never shorter than the backend's `Retry-After`.
 */

/** Share of a delay that jitter may add or remove. */
export const JITTER = 0.2;
/** A backend's `Retry-After` is honoured up to this, in ms (one hour). */
export const MAX_RETRY_AFTER_MS = 3_600_000;

/**
 * The delay in ms before the next try after `attempts` tries have failed, or undefined when the
 * schedule is exhausted. `random` returns a number in [0, 1).
 */
export function retryDelayMs(scheduleMs: number[], attempts: number, retryAfterMs = 0, random: () => number = Math.random): number | undefined {
  if (attempts < 1 || attempts > scheduleMs.length) return undefined;
  const base = scheduleMs[attempts - 1];
  const jittered = Math.round(base * (1 - JITTER + 2 * JITTER * random()));
  return Math.max(jittered, Math.min(retryAfterMs, MAX_RETRY_AFTER_MS));
}

export { parseRetryAfter } from '../retry-after.ts';
