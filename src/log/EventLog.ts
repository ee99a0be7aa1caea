/**
 * The event log port: one ordered, de-duplicated log of CloudEvents that every producer appends to
 * and every bridge reads from. Implemented by `memory.ts`, `sqlite.ts` (and a Redis store later);
 * every implementation passes the shared contract suite in `test/log/contract.ts`.
 */

/** A CloudEvents 1.0 envelope (PROTOCOL.md 2.5). Extension attributes are kept as received. */
import type { PruneResult, RetentionLimits } from './retention.ts';

export interface CloudEvent {
  specversion: string;
  id: string;
  source: string;
  type: string;
  datacontenttype: string;
  dataschema?: string;
  correlationid?: string;
  time: string;
  data: Record<string, unknown>;
  [extension: string]: unknown;
}

/** An event to append, with the backend it came from (for the per-service views). */
export interface NewEvent {
  /** Backend id, or undefined for events that belong to no backend. */
  backend?: string;
  event: CloudEvent;
}

/** An event in the log with its position: a positive integer, strictly increasing in log order. */
export interface StoredEvent {
  position: number;
  backend?: string;
  event: CloudEvent;
}

/** Filters of `GET /events` (PROTOCOL.md 4.2); every given field must match. */
export interface EventFilter {
  type?: string;
  source?: string;
  correlationId?: string;
  /**
   * Any of these correlation ids (a command id and the ids a backend answered it with); at most
   * `MAX_CORRELATION_IDS`. An empty list matches nothing.
   */
  correlationIds?: string[];
  backend?: string;
  /** Inclusive lower bound on the event's `time`, epoch milliseconds. */
  fromMs?: number;
  /** Inclusive upper bound on the event's `time`, epoch milliseconds. */
  toMs?: number;
}

/** Most correlation ids one filter may list (`EventFilter.correlationIds`). */
export const MAX_CORRELATION_IDS = 32;

/** A page of a query. `next` is set when more matching events may follow (keyset: position). */
export interface EventPage {
  events: StoredEvent[];
  next?: number;
}

/** A checkpoint written in the same transaction as the events it covers. */
export interface Checkpoint {
  key: string;
  value: string;
}

export interface AppendResult {
  /** The events actually added, in log order (duplicates left out). */
  appended: StoredEvent[];
  /** How many of the batch were already in the log (same `id`). */
  duplicates: number;
}

/** Called after each committed append with the events it added (never with an empty list). */
export type LogListener = (events: StoredEvent[]) => void;

export interface EventLog {
  /** Opens the store (creates tables, replays nothing). Idempotent. */
  open(): Promise<void>;
  /**
   * Appends a batch atomically. An event whose `id` is already in the log is skipped (no-op), so
   * re-appending is safe. When `checkpoint` is given it is stored in the same transaction.
   */
  append(batch: NewEvent[], checkpoint?: Checkpoint): Promise<AppendResult>;
  /** Events matching `filter` with position > `after` (0 = from the start), in log order, at most `limit`. */
  query(filter: EventFilter, after: number, limit: number): Promise<EventPage>;
  /** The position of the event with this id, or undefined if it is not (or no longer) in the log. */
  positionOf(id: string): Promise<number | undefined>;
  /** The stored value of a checkpoint, or undefined. */
  checkpoint(key: string): Promise<string | undefined>;
  /** Writes a checkpoint on its own (when a poll yields no events but moves the cursor). */
  saveCheckpoint(checkpoint: Checkpoint): Promise<void>;
  /** The highest position in the log (0 when empty). */
  head(): Promise<number>;
  /** Number of events in the log. */
  count(): Promise<number>;
  /** Live fan-out inside this process: `listener` sees every later append. Returns the unsubscribe. */
  subscribe(listener: LogListener): () => void;
  /** Closes the store. Safe to call twice. */
  close(): Promise<void>;
}

/** Optional ability: retention (events.retention). */
export interface RetainingLog {
  /**
   * Deletes the oldest events beyond `maxEvents` and those older than `maxAgeMs` (by append time),
   * never one after `keepAfter` (a durable reader has not read it). Returns how many it deleted and
   * how many the rules wanted deleted but `keepAfter` kept.
   */
  prune(limits: RetentionLimits, nowMs?: number): Promise<PruneResult>;
}

/** Type guard for the retention ability. */
export function canPrune(log: EventLog): log is EventLog & RetainingLog {
  return typeof (log as Partial<RetainingLog>).prune === 'function';
}
