/**
 * The incremental cursor of a legacy `records` poll (`cursor: { param, field }`): the highest
 * value of `field` seen so far, sent back as `?{param}=` on the next poll. The query is treated as
 * inclusive, so the boundary records come again and are dropped by their event id.
 */

/** The cursor value of a record: `field` (a dotted path) as text, or undefined when absent or not scalar. */
export function cursorValueOf(record: unknown, field: string): string | undefined {
  let value: unknown = record;
  for (const key of field.split('.')) {
    if (typeof value !== 'object' || value === null) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  if (typeof value === 'string' && value !== '') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return undefined;
}

/**
 * Orders two cursor values: numerically when both are numbers (checked first: `Date.parse`
 * accepts some bare numbers), as instants when both parse as dates (so `…00Z` and `…00.000Z` are
 * equal), otherwise by code units. Negative, zero or positive like `Array.sort`'s comparator.
 */
export function compareCursors(a: string, b: string): number {
  const na = numeric(a);
  const nb = numeric(b);
  if (na !== undefined && nb !== undefined) return Math.sign(na - nb);
  const ta = Date.parse(a);
  const tb = Date.parse(b);
  if (!Number.isNaN(ta) && !Number.isNaN(tb)) return Math.sign(ta - tb);
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The later of two cursor values; the current one wins a tie (its text is kept as the backend wrote it). */
export function laterCursor(current: string | undefined, candidate: string | undefined): string | undefined {
  if (candidate === undefined) return current;
  if (current === undefined) return candidate;
  return compareCursors(candidate, current) > 0 ? candidate : current;
}

function numeric(text: string): number | undefined {
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text.trim())) return undefined;
  const value = Number(text);
  return Number.isFinite(value) ? value : undefined;
}
