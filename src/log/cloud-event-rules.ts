/**
 * Attribute rules of the CloudEvents envelope (PROTOCOL.md 2.5) shared by everything that checks
 * one: ingested events, incoming commands, webhook type filters.
 */

/** PascalCase types (PROTOCOL.md 2.5, 6.1), e.g. `OrderPlacedV1`. */
export const PASCAL_CASE = /^[A-Z][A-Za-z0-9]*$/;

/**
 * RFC 3339 date-time (the CloudEvents `time` format, a profile of ISO 8601): a zone (`Z` or an
 * offset) is required, seconds and fractions are optional, `T` may be a space (RFC 3339 5.6 note).
 */
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})$/;

/** True for an epoch-parseable RFC 3339 date-time with a zone. */
export function isEventTime(value: unknown): value is string {
  return typeof value === 'string' && DATE_TIME.test(value) && !Number.isNaN(Date.parse(value));
}
