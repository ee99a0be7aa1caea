/**
 * `Retry-After` (RFC 9110 §10.2.3: delay-seconds or an HTTP-date), as sent by backends to command
 * dispatch and by receivers to webhook delivery.
 */

/** The delay it asks for, in ms from `nowMs` (never negative), or undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number = Date.now()): number | undefined {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return undefined;
  const ms = /^\d+$/.test(text) ? Number(text) * 1000 : Date.parse(text) - nowMs;
  return Number.isNaN(ms) ? undefined : Math.max(0, ms);
}
