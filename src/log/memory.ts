/**
 * The in-memory event log (`storage.driver: memory`): for tests and throwaway runs. It behaves like
 * the SQLite store (same contract suite) and keeps nothing: `close()` drops every event.
 *
 * Events are kept as JSON text, as a durable store would, so a reader never shares an object with
 * the producer or with another reader. Queries binary-search the start position and scan forward
 * with the filter; that is linear in the events skipped by the filter, acceptable for this store.
 */
import type {
  AppendResult,
  Checkpoint,
  EventFilter,
  EventLog,
  EventPage,
  LogListener,
  NewEvent,
  RetainingLog,
  StoredEvent,
} from './EventLog.ts';
import { assertPageArgs, eventKeys, matchesFilter, storedEvent, type EventKeys } from './event-query.ts';
import { ListenerSet, type ListenerErrorHandler } from './listeners.ts';
import { excessEvents, expiryCutoffMs, splitAtFloor, type PruneResult, type RetentionLimits } from './retention.ts';

/** One event as the memory store keeps it. */
interface MemoryRow extends EventKeys {
  position: number;
  id: string;
  /** Epoch ms of the append; never decreases along the log, so expired rows are a prefix. */
  appendedMs: number;
  envelope: string;
}

/** Options of the memory store. */
export interface MemoryEventLogOptions {
  /** Receives errors thrown by subscribers; default `process.emitWarning`. */
  onListenerError?: ListenerErrorHandler;
}

/** An `EventLog` held in process memory; positions start at 1 and are never reused. */
export class MemoryEventLog implements EventLog, RetainingLog {
  /** Sorted by position (appends only add at the end; pruning only removes a prefix). */
  #rows: MemoryRow[] = [];
  readonly #byId = new Map<string, MemoryRow>();
  readonly #checkpoints = new Map<string, string>();
  readonly #listeners: ListenerSet;
  #lastPosition = 0;
  #lastAppendedMs = 0;
  #open = false;

  /** @param options see `MemoryEventLogOptions`. */
  constructor(options: MemoryEventLogOptions = {}) {
    this.#listeners = new ListenerSet(options.onListenerError);
  }

  async open(): Promise<void> {
    this.#open = true;
  }

  async append(batch: NewEvent[], checkpoint?: Checkpoint): Promise<AppendResult> {
    this.#assertOpen();
    // Serialise the whole batch before changing anything, so a failing event leaves no trace (atomicity).
    const rows = batch.map((item) => ({ item, keys: eventKeys(item), envelope: JSON.stringify(item.event) }));
    const appendedMs = this.#nextAppendedMs();
    const appended: StoredEvent[] = [];
    for (const { item, keys, envelope } of rows) {
      if (this.#byId.has(item.event.id)) continue;
      const row: MemoryRow = { ...keys, position: ++this.#lastPosition, id: item.event.id, appendedMs, envelope };
      this.#rows.push(row);
      this.#byId.set(row.id, row);
      appended.push(storedEvent(row.position, item.backend, item.event));
    }
    if (checkpoint) this.#checkpoints.set(checkpoint.key, checkpoint.value);
    this.#listeners.notify(appended);
    return { appended, duplicates: batch.length - appended.length };
  }

  async query(filter: EventFilter, after: number, limit: number): Promise<EventPage> {
    this.#assertOpen();
    assertPageArgs(after, limit, filter);
    const found: MemoryRow[] = [];
    for (let i = this.#firstIndexAfter(after); i < this.#rows.length && found.length <= limit; i++) {
      if (matchesFilter(this.#rows[i], filter)) found.push(this.#rows[i]);
    }
    const more = found.length > limit;
    const events = found.slice(0, limit).map(parseRow);
    return more ? { events, next: events[events.length - 1].position } : { events };
  }

  async positionOf(id: string): Promise<number | undefined> {
    this.#assertOpen();
    return this.#byId.get(id)?.position;
  }

  async checkpoint(key: string): Promise<string | undefined> {
    this.#assertOpen();
    return this.#checkpoints.get(key);
  }

  async saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
    this.#assertOpen();
    this.#checkpoints.set(checkpoint.key, checkpoint.value);
  }

  /** The highest position in the log (0 when empty); positions are never reused, even after pruning. */
  async head(): Promise<number> {
    this.#assertOpen();
    return this.#rows.at(-1)?.position ?? 0;
  }

  async count(): Promise<number> {
    this.#assertOpen();
    return this.#rows.length;
  }

  subscribe(listener: LogListener): () => void {
    return this.#listeners.subscribe(listener);
  }

  /**
   * Deletes the events appended before `nowMs - maxAgeMs` and the oldest beyond `maxEvents`; a limit
   * of 0 disables its rule. Survivors keep their positions. Returns how many were deleted.
   */
  async prune(limits: RetentionLimits, nowMs: number = Date.now()): Promise<PruneResult> {
    this.#assertOpen();
    const cutoff = expiryCutoffMs(limits, nowMs);
    let wanted = excessEvents(limits, this.#rows.length);
    if (cutoff !== undefined) {
      while (wanted < this.#rows.length && this.#rows[wanted].appendedMs < cutoff) wanted++;
    }
    const deletable = limits.keepAfter === undefined ? this.#rows.length : this.#firstIndexAfter(limits.keepAfter);
    const result = splitAtFloor(wanted, deletable);
    for (const row of this.#rows.slice(0, result.removed)) this.#byId.delete(row.id);
    this.#rows = this.#rows.slice(result.removed);
    return result;
  }

  /** Drops every event, checkpoint and listener. Safe to call twice. */
  async close(): Promise<void> {
    this.#open = false;
    this.#rows = [];
    this.#lastPosition = 0;
    this.#lastAppendedMs = 0;
    this.#byId.clear();
    this.#checkpoints.clear();
    this.#listeners.clear();
  }

  /** Index of the first row whose position is greater than `after` (binary search). */
  #firstIndexAfter(after: number): number {
    let low = 0;
    let high = this.#rows.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.#rows[mid].position <= after) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  #nextAppendedMs(): number {
    // A clock that steps back must not make a later event look older than an earlier one.
    this.#lastAppendedMs = Math.max(this.#lastAppendedMs, Date.now());
    return this.#lastAppendedMs;
  }

  #assertOpen(): void {
    if (!this.#open) throw new Error('MemoryEventLog is not open');
  }
}

function parseRow(row: MemoryRow): StoredEvent {
  return storedEvent(row.position, row.backend, JSON.parse(row.envelope));
}
