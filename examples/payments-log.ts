/**
 * The example payments service's event log: an in-memory, append-only list of CloudEvents with the
 * filters of PROTOCOL.md 4.2/4.3, index-based pages, and live listeners for the SSE stream.
 */

/** A CloudEvents 1.0 event as the protocol publishes it (PROTOCOL.md 2.5). */
export interface CloudEventLike {
  specversion: '1.0';
  id: string;
  source: string;
  type: string;
  datacontenttype: 'application/json';
  /** Present for typed events. */
  dataschema?: string;
  /** The id of the command whose processing produced it; absent on spontaneous events. */
  correlationid?: string;
  /** ISO 8601. */
  time: string;
  data: Record<string, unknown>;
}

/** Filters of `GET /events` and `GET /events/stream`; absent fields match everything. */
export interface EventFilter {
  type?: string;
  correlationId?: string;
  source?: string;
  /** Earliest `time`, inclusive, epoch milliseconds. */
  from?: number;
  /** Latest `time`, inclusive, epoch milliseconds. */
  to?: number;
}

/** One page of matching events; `next` is the index to continue from, absent on the last page. */
export interface EventPage {
  events: CloudEventLike[];
  next?: number;
}

/** True when `event` passes every field of `filter`. */
export function matches(event: CloudEventLike, filter: EventFilter): boolean {
  if (filter.type !== undefined && event.type !== filter.type) return false;
  if (filter.correlationId !== undefined && event.correlationid !== filter.correlationId) return false;
  if (filter.source !== undefined && event.source !== filter.source) return false;
  if (filter.from === undefined && filter.to === undefined) return true;
  const time = Date.parse(event.time);
  return (filter.from === undefined || time >= filter.from) && (filter.to === undefined || time <= filter.to);
}

/** Called with each appended event. */
export type EventListener = (event: CloudEventLike) => void;

/** The log. `events` is the list itself (tests read it); append only through `append`. */
export interface EventLog {
  readonly events: CloudEventLike[];
  append(event: CloudEventLike): void;
  /** Up to `limit` events matching `filter`, scanning from index `start`. */
  page(filter: EventFilter, start: number, limit: number): EventPage;
  /** Events after the one with id `lastId` that match `filter`; none when that id is unknown. */
  after(lastId: string, filter: EventFilter): CloudEventLike[];
  /** Adds a live listener; returns its removal. */
  listen(listener: EventListener): () => void;
}

/** A new, empty log. */
export function createEventLog(): EventLog {
  const events: CloudEventLike[] = [];
  const listeners = new Set<EventListener>();

  function page(filter: EventFilter, start: number, limit: number): EventPage {
    const found: CloudEventLike[] = [];
    for (let index = start; index < events.length; index++) {
      if (!matches(events[index], filter)) continue;
      // One match beyond the page means another page exists (PROTOCOL.md 4.2, rule 2).
      if (found.length === limit) return { events: found, next: index };
      found.push(events[index]);
    }
    return { events: found };
  }

  function after(lastId: string, filter: EventFilter): CloudEventLike[] {
    const index = events.findIndex((event) => event.id === lastId);
    return index < 0 ? [] : events.slice(index + 1).filter((event) => matches(event, filter));
  }

  return {
    events,
    append(event) {
      events.push(event);
      for (const listener of listeners) listener(event);
    },
    page,
    after,
    listen(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}
