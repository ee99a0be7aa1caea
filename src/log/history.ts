/**
 * `GET /events` (PROTOCOL.md 4.2) over the log: filters, a page size capped at
 * `events.pageSize.max`, and opaque keyset cursors bound to the filters.
 */
import type { EventsConfig } from '../config/types.ts';
import type { EventVisibility } from '../edge/access-rules.ts';
import type { CloudEvent, EventFilter, EventLog, StoredEvent } from './EventLog.ts';
import { decodeCursor, encodeCursor, filterKey } from './cursor.ts';

/** The body of `GET /events` (PROTOCOL.md 2.7, event list). */
export interface EventList {
  events: CloudEvent[];
  nextCursor?: string;
}

export interface HistoryRequest {
  filter: EventFilter;
  /** Requested page size, or undefined for the default. */
  limit?: number;
  /** The `after` cursor, if any. */
  after?: string;
  /**
   * Other ids whose events also answer `filter.correlationId` (the ids a backend answered that
   * command with). They widen the query, not the cursor: a page's cursor stays valid when an alias
   * appears between two pages.
   */
  correlationAliases?: string[];
  /**
   * The events the caller sees (per-caller catalogues); the others are left out of the page as if
   * they did not match. Undefined: every event.
   */
  visible?: EventVisibility;
}

/** Log reads one page may take to fill itself when the caller sees few of the matching events. */
export const MAX_READS_PER_PAGE = 8;

/** Reads one page of history; throws `INVALID_CURSOR` for a cursor made for other filters. */
export async function readHistory(log: EventLog, pageSize: EventsConfig['pageSize'], request: HistoryRequest): Promise<EventList> {
  const key = filterKey(request.filter);
  const after = request.after === undefined ? 0 : decodeCursor(request.after, key);
  const limit = Math.min(request.limit ?? pageSize.default, pageSize.max);
  const filter = withAliases(request.filter, request.correlationAliases);
  const { visible } = request;
  const events: CloudEvent[] = [];
  let position: number | undefined = after;
  // Events the caller does not see are skipped, and the page reads on to fill itself (a bounded
  // number of reads: a short page with a cursor is still a correct page).
  for (let reads = 0; position !== undefined && events.length < limit && reads < MAX_READS_PER_PAGE; reads++) {
    const page = await log.query(filter, position, limit - events.length);
    for (const stored of page.events) if (visible === undefined || visible(stored.backend, stored.event.type)) events.push(stored.event);
    position = page.next;
  }
  const list: EventList = { events };
  if (position !== undefined) list.nextCursor = encodeCursor(position, key);
  return list;
}

/** The filter with `correlationId` widened to its aliases, when it has some. */
function withAliases(filter: EventFilter, aliases: string[] | undefined): EventFilter {
  if (filter.correlationId === undefined || !aliases || aliases.length === 0) return filter;
  const { correlationId, ...rest } = filter;
  return { ...rest, correlationIds: [correlationId, ...aliases.filter((alias) => alias !== correlationId)] };
}

/** The event `id` as the log holds it (with its position and backend), or undefined when it is not (or no longer) there. */
export async function storedEventOf(log: Pick<EventLog, 'positionOf' | 'query'>, id: string): Promise<StoredEvent | undefined> {
  const position = await log.positionOf(id);
  if (position === undefined) return undefined;
  const stored = (await log.query({}, position - 1, 1)).events[0];
  return stored?.event.id === id ? stored : undefined;
}
