/**
 * One stream's subscriber: its filters and the seam between replay and live delivery
 * (PROTOCOL.md 4.3, rules 3 and 4; issue 6: "subscribe first, replay, de-duplicate by position").
 *
 * The hub registers the subscriber with the live fan-out *before* the replay reads the log, so no
 * event can fall between the two. While the subscriber catches up, live events are held in a
 * buffer; every delivery advances a cursor (the log position of the last event sent), and an
 * event at or below the cursor is skipped, so nothing is sent twice. The log is the real buffer:
 * replay reads it page by page at the client's pace, and when the held live events pass
 * `maxBufferedBytes` they are dropped from memory and read again from the log instead.
 */
import type { EventFilter, EventLog } from '../../log/EventLog.ts';
import { matchesFilter, type EventKeys } from '../../log/event-query.ts';
import { isTerminalType } from '../../mapping/names.ts';
import type { SseMetrics } from '../../metrics/sse.ts';
import type { StreamWriter } from './sse-connection.ts';
import { eventFrame, RESET_FRAME } from './sse-frame.ts';

/** Events read from the log per replay query. */
export const REPLAY_PAGE_SIZE = 200;

/** What replay reads: the log's keyset pages and id lookup. */
export type ReplaySource = Pick<EventLog, 'query' | 'positionOf'>;

/** One appended event as the hub hands it to every subscriber: keys and frame computed once. */
export interface OutgoingEvent {
  position: number;
  keys: EventKeys;
  frame: Buffer;
}

/** Options of `SseSubscriber`. */
export interface SseSubscriberOptions {
  connection: StreamWriter;
  source: ReplaySource;
  /** `type`, `source`, `correlationId` of the request and `backend` of a per-service stream. */
  filter: EventFilter;
  /** End the stream after a terminal event when the filter has a `correlationId` (`sse.closeOnTerminal`). */
  closeOnTerminal: boolean;
  /** Bytes of live events held while catching up before they are dropped and re-read from the log. */
  maxHeldBytes: number;
  metrics: SseMetrics;
}

/** One stream's filters, cursor and replay/live seam. */
export class SseSubscriber {
  readonly #options: SseSubscriberOptions;
  readonly #connection: StreamWriter;
  #live: boolean;
  /** Position of the last event sent; events at or below it are duplicates. */
  #cursor = 0;
  /** Position of the first event the fan-out offered (any filter), the start of "live". */
  #firstOffered: number | undefined;
  #held: OutgoingEvent[] = [];
  #heldBytes = 0;
  /** Held events were dropped: the log must be read again before going live. */
  #overflowed = false;

  /** A subscriber that will replay from a `Last-Event-ID` starts in catch-up; otherwise it is live at once. */
  constructor(options: SseSubscriberOptions, replay: boolean) {
    this.#options = options;
    this.#connection = options.connection;
    this.#live = !replay;
  }

  /** Called by the fan-out for every appended event, in log order. */
  offer(event: OutgoingEvent): void {
    if (this.#connection.closed) return;
    this.#firstOffered ??= event.position;
    if (!matchesFilter(event.keys, this.#options.filter)) return;
    if (this.#live) this.#sendLive(event);
    else this.#hold(event);
  }

  /**
   * Replays the events after `lastEventId`, then goes live. An id not in the log (unknown or
   * pruned) sends `: reset` and goes live from the moment the stream was subscribed.
   */
  async replay(lastEventId: string): Promise<void> {
    const position = await this.#options.source.positionOf(lastEventId);
    if (this.#connection.closed) return;
    this.#options.metrics.replay(position === undefined ? 'reset' : 'replayed');
    if (position !== undefined) {
      this.#cursor = position;
      return this.#catchUp(true);
    }
    this.#connection.send(RESET_FRAME);
    // Live starts with the first event offered after subscribing; held events are all after it.
    this.#cursor = this.#firstOffered === undefined ? 0 : this.#firstOffered - 1;
    return this.#catchUp(false);
  }

  /**
   * Reads log pages (when asked to, or when held events were dropped), then sends the held events
   * past the cursor, and goes live the moment nothing is held: that check and the switch happen
   * in one synchronous step, so no offered event can slip between them.
   */
  async #catchUp(fromLog: boolean): Promise<void> {
    let readLog = fromLog;
    while (!this.#connection.closed) {
      if (this.#overflowed) {
        // Cleared before the next query, so anything dropped from now on sets it again.
        this.#overflowed = false;
        readLog = true;
      }
      if (readLog) {
        readLog = await this.#replayPage();
        continue;
      }
      const next = this.#held.shift();
      if (next === undefined) {
        this.#live = true;
        return;
      }
      this.#heldBytes -= next.frame.length;
      if (next.position > this.#cursor) await this.#sendPaced(next.position, next.keys.type, next.frame);
    }
  }

  /** Sends one page of the log after the cursor; true when more pages follow. */
  async #replayPage(): Promise<boolean> {
    const page = await this.#options.source.query(this.#options.filter, this.#cursor, REPLAY_PAGE_SIZE);
    for (const stored of page.events) {
      if (stored.position <= this.#cursor) continue;
      if (!(await this.#sendPaced(stored.position, stored.event.type, eventFrame(stored.event)))) return false;
    }
    return page.next !== undefined;
  }

  #hold(event: OutgoingEvent): void {
    if (this.#heldBytes + event.frame.length > this.#options.maxHeldBytes) {
      // Bounded: forget them; the log still has every one and catch-up reads them from there.
      this.#held = [];
      this.#heldBytes = 0;
      this.#overflowed = true;
      return;
    }
    this.#held.push(event);
    this.#heldBytes += event.frame.length;
  }

  #sendLive(event: OutgoingEvent): void {
    if (event.position <= this.#cursor) return;
    this.#cursor = event.position;
    if (!this.#connection.send(event.frame)) return;
    this.#options.metrics.sent(1);
    this.#endIfTerminal(event.keys.type);
  }

  /** Sends at the client's pace; false when the stream is closed (or just closed on a terminal event). */
  async #sendPaced(position: number, type: string, frame: Buffer): Promise<boolean> {
    this.#cursor = position;
    if (!(await this.#connection.sendPaced(frame))) return false;
    this.#options.metrics.sent(1);
    return !this.#endIfTerminal(type);
  }

  /** PROTOCOL.md 4.3 rule 7 and DESIGN.md (terminal types): a command's stream ends with its outcome. */
  #endIfTerminal(type: string): boolean {
    const { closeOnTerminal, filter } = this.#options;
    if (!closeOnTerminal || (filter.correlationId === undefined && filter.correlationIds === undefined) || !isTerminalType(type)) return false;
    this.#connection.close('terminal');
    return true;
  }
}
