/**
 * What happens after an outbound delivery attempt (a webhook delivery, an A2A push notification): success, a retry later (`webhooks.retry.schedule` with
 * jitter, or the receiver's `Retry-After` on 429/503), a dead letter after the last retry, or
 * `410 Gone`, which disables the subscription. A redirect is a failed attempt: it is never followed
 * (PROTOCOL.md 6.3 rule 3: the target would have to be validated again).
 */
import { parseRetryAfter as parseRetryAfterMs } from '../retry-after.ts';

/** Jitter of a scheduled retry: ±10 % of its delay, so receivers that failed together do not retry together. */
export const JITTER = 0.1;

/** Longest `Retry-After` honoured: 24 h (a longer one waits 24 h). */
export const MAX_RETRY_AFTER_MS = 24 * 60 * 60 * 1000;

/** What one attempt got: an HTTP answer, or an error before one. */
export interface AttemptResult {
  /** HTTP status, when the receiver answered. */
  status?: number;
  /** Why no usable answer came (network, timeout, refused target). */
  error?: string;
  /** The answer's `Retry-After`, in ms from now. */
  retryAfterMs?: number;
}

/** How an attempt ended: the state to move an `in-flight` delivery to. */
export interface AttemptOutcome {
  status: 'succeeded' | 'pending' | 'dead';
  /** For `pending`: when the next attempt is due, epoch ms. */
  nextAttemptMs?: number;
  lastError?: string;
  lastStatus?: number;
  /** The attempt was not made after all (its subscription was disabled meanwhile): it does not count. */
  uncount?: boolean;
}

/** How an attempt is counted in metrics. */
export type AttemptKind = 'succeeded' | 'failed' | 'gone';

/** The queue transition of an attempt and how it is counted. */
export interface AttemptVerdict {
  kind: AttemptKind;
  outcome: AttemptOutcome;
}

/**
 * The delay before retry number `retry` (1-based) of `scheduleMs`, jittered; undefined when the
 * schedule has no such retry (N entries = N retries after the first attempt).
 */
export function retryDelayMs(scheduleMs: readonly number[], retry: number, random: () => number = Math.random): number | undefined {
  const base = scheduleMs[retry - 1];
  if (base === undefined) return undefined;
  return Math.max(0, Math.round(base * (1 - JITTER + 2 * JITTER * random())));
}

/** `Retry-After` (delay-seconds or an HTTP-date, RFC 9110 10.2.3) in ms from `nowMs`, capped; undefined when absent or unreadable. */
export function parseRetryAfter(value: string | string[] | undefined, nowMs: number): number | undefined {
  const ms = parseRetryAfterMs(value, nowMs);
  return ms === undefined ? undefined : Math.min(ms, MAX_RETRY_AFTER_MS);
}

/** Judges attempt number `attempts` (1-based) of a delivery. */
export function judgeAttempt(result: AttemptResult, attempts: number, scheduleMs: readonly number[], nowMs: number, random?: () => number): AttemptVerdict {
  const status = result.status;
  if (status !== undefined && status >= 200 && status < 300) return { kind: 'succeeded', outcome: { status: 'succeeded', lastStatus: status } };
  if (status === 410) return { kind: 'gone', outcome: { status: 'dead', lastStatus: status, lastError: 'receiver answered 410 Gone' } };
  const lastError = result.error ?? failureText(status);
  const delay = retryDelayMs(scheduleMs, attempts, random);
  if (delay === undefined) return { kind: 'failed', outcome: { status: 'dead', lastError, lastStatus: status } };
  const honoured = status === 429 || status === 503 ? (result.retryAfterMs ?? 0) : 0;
  return { kind: 'failed', outcome: { status: 'pending', nextAttemptMs: nowMs + Math.max(delay, honoured), lastError, lastStatus: status } };
}

function failureText(status: number | undefined): string {
  if (status === undefined) return 'no answer';
  if (status >= 300 && status < 400) return `receiver answered ${status}: redirects are not followed`;
  return `receiver answered ${status}`;
}
