/**
 * Query semantics shared by every event log store: the indexed keys of an event, the filter
 * predicate of `GET /events` (PROTOCOL.md 4.2) and the checks on page arguments.
 */
import { ProtoError } from '../errors.ts';
import { MAX_CORRELATION_IDS, type CloudEvent, type EventFilter, type NewEvent, type StoredEvent } from './EventLog.ts';

/** The attributes of an event that filters look at. */
export interface EventKeys {
  type: string;
  source: string;
  correlationId?: string;
  backend?: string;
  /** The event's `time` in epoch milliseconds; undefined when absent or not a date (no time bound matches it). */
  timeMs?: number;
}

/** The filterable keys of an event about to be appended. */
export function eventKeys(item: NewEvent): EventKeys {
  const { event } = item;
  const timeMs = typeof event.time === 'string' ? Date.parse(event.time) : Number.NaN;
  return {
    type: event.type,
    source: event.source,
    correlationId: typeof event.correlationid === 'string' ? event.correlationid : undefined,
    backend: item.backend,
    timeMs: Number.isNaN(timeMs) ? undefined : timeMs,
  };
}

/** True when `keys` match every field given in `filter` (time bounds inclusive). */
export function matchesFilter(keys: EventKeys, filter: EventFilter): boolean {
  if (filter.type !== undefined && keys.type !== filter.type) return false;
  if (filter.source !== undefined && keys.source !== filter.source) return false;
  if (filter.correlationId !== undefined && keys.correlationId !== filter.correlationId) return false;
  if (filter.correlationIds !== undefined && (keys.correlationId === undefined || !filter.correlationIds.includes(keys.correlationId))) return false;
  if (filter.backend !== undefined && keys.backend !== filter.backend) return false;
  return withinTime(keys.timeMs, filter);
}

function withinTime(timeMs: number | undefined, filter: EventFilter): boolean {
  if (filter.fromMs === undefined && filter.toMs === undefined) return true;
  if (timeMs === undefined) return false;
  if (filter.fromMs !== undefined && timeMs < filter.fromMs) return false;
  return filter.toMs === undefined || timeMs <= filter.toMs;
}

/**
 * Checks the page arguments of `EventLog.query`: `after` a non-negative integer position (0 = from
 * the start), `limit` a positive integer. Throws `INVALID_PARAMETER` otherwise.
 */
export function assertPageArgs(after: number, limit: number, filter?: EventFilter): void {
  if (filter?.correlationIds && filter.correlationIds.length > MAX_CORRELATION_IDS) {
    throw new ProtoError('INVALID_PARAMETER', `at most ${MAX_CORRELATION_IDS} correlation ids per query`);
  }
  if (!Number.isSafeInteger(after) || after < 0) {
    throw new ProtoError('INVALID_PARAMETER', `after must be a non-negative integer position, got ${after}`);
  }
  if (!Number.isSafeInteger(limit) || limit < 1) {
    throw new ProtoError('INVALID_PARAMETER', `limit must be a positive integer, got ${limit}`);
  }
}

/** A `StoredEvent`; `backend` is left out (not set to undefined) when the event belongs to no backend. */
export function storedEvent(position: number, backend: string | null | undefined, event: CloudEvent): StoredEvent {
  return backend == null ? { position, event } : { position, backend, event };
}
