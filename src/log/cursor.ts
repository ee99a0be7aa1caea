/**
 * Opaque pagination cursors of `GET /events` (PROTOCOL.md 4.2: `after` is the `nextCursor` of a
 * previous response, "not constructed manually", with "all other parameters kept unchanged").
 *
 * A cursor is base64url of `{position}.{check}`, where `check` is a truncated SHA-256 of
 * `{position}|{filterKey}`. It is not a secret (anyone may read the position); the check only
 * rejects cursors that were edited by hand, truncated, or reused with other filters.
 */
import { createHash } from 'node:crypto';
import { ProtoError } from '../errors.ts';
import type { EventFilter } from './EventLog.ts';

/** Length of the check, in base64url characters (72 bits). */
const CHECK_LENGTH = 12;

/** Length of a filter key, in base64url characters (96 bits). */
const FILTER_KEY_LENGTH = 16;

function digest(text: string, length: number): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, length);
}

/**
 * A short, stable hash of the filters of a query (type, source, correlationId, backend, fromMs,
 * toMs, and correlationIds when given, as a set), not of its limit: a client may change the page
 * size between pages. Two filters with the same fields give the same key, whatever the property
 * order.
 */
export function filterKey(filter: EventFilter): string {
  const fields: unknown[] = [filter.type, filter.source, filter.correlationId, filter.backend, filter.fromMs, filter.toMs];
  // Appended only when present, so the keys (and cursors) of filters without it stay as they were.
  if (filter.correlationIds !== undefined) fields.push([...new Set(filter.correlationIds)].sort());
  return digest(JSON.stringify(fields.map((value) => value ?? null)), FILTER_KEY_LENGTH);
}

/** The cursor that resumes a query with these filters after `position` (a non-negative integer). */
export function encodeCursor(position: number, filterKey: string): string {
  if (!Number.isSafeInteger(position) || position < 0) throw new RangeError(`invalid cursor position ${position}`);
  return Buffer.from(`${position}.${digest(`${position}|${filterKey}`, CHECK_LENGTH)}`).toString('base64url');
}

/**
 * The position a cursor resumes after. Throws `INVALID_CURSOR` when the cursor is malformed, was
 * edited, or was made for other filters than `filterKey`.
 */
export function decodeCursor(cursor: string, filterKey: string): number {
  const match = /^(0|[1-9]\d{0,15})\.([\w-]+)$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'));
  const position = match ? Number(match[1]) : Number.NaN;
  // base64url decoding ignores stray characters, so only a cursor that re-encodes identically is ours.
  if (!match || !Number.isSafeInteger(position) || encodeCursor(position, filterKey) !== cursor) {
    throw new ProtoError('INVALID_CURSOR', 'after is not a cursor returned for this query', { parameter: 'after' });
  }
  return position;
}
