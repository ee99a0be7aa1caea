/**
 * Query parameter parsing shared by the endpoints: integers and ISO 8601 times, each refusal a
 * 400 `INVALID_PARAMETER` naming the parameter.
 */
import { ProtoError } from '../errors.ts';

/** ISO 8601 date-time (RFC 3339 profile: `T`, optional fraction, `Z` or offset) or a plain date. */
const ISO_8601 = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/i;

/** A positive integer parameter, or `fallback` when absent. */
export function positiveInteger(query: URLSearchParams, name: string, fallback: number): number {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(value) || value < 1) {
    throw new ProtoError('INVALID_PARAMETER', `${name} must be an integer of at least 1`, { parameter: name, value: raw });
  }
  return value;
}

/** An ISO 8601 time parameter as epoch milliseconds, or undefined when absent. */
export function isoTime(query: URLSearchParams, name: string): number | undefined {
  const raw = query.get(name);
  if (raw === null) return undefined;
  const ms = ISO_8601.test(raw.trim()) ? Date.parse(raw.trim()) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new ProtoError('INVALID_PARAMETER', `${name} must be an ISO 8601 time, e.g. 2026-01-31T12:00:00Z`, { parameter: name, value: raw });
  }
  return ms;
}

/** A non-empty string parameter, or undefined when absent or empty. */
export function text(query: URLSearchParams, name: string): string | undefined {
  const raw = query.get(name);
  return raw === null || raw === '' ? undefined : raw;
}
