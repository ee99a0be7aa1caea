/**
 * One subscriber of the live tail, whatever its transport (SSE, gRPC, ...): its filters and the seam
 * between replay and live delivery (PROTOCOL.md 4.3, rules 3 and 4: "subscribe first, replay,
 * de-duplicate by position"). The transport supplies a `TailWriter` and the `TailEncoding` of its
 * frames; this class decides what is sent and when, the writer only how.
 *
 * The hub registers the subscriber with the live fan-out *before* the replay reads the log, so no
 * event can fall between the two. While the subscriber catches up, live events are held in a
 * buffer; every delivery advances a cursor (the log position of the last event sent), and an
 * event at or below the cursor is skipped, so nothing is sent twice. The log is the real buffer:
 * replay reads it page by page at the client's pace, and when the held live events pass
 * byte bound they are dropped from memory and read again from the log instead.
 *
 * A correlation alias learnt while the subscription is open (`followAlias`) widens its filter, but
 * the backend's events under that alias may already have gone by: the ingestor can append them
 * before the dispatcher reads the backend's answer, and on another replica the log's tail and the
 * alias notice arrive on two connections in either order. So a late alias also searches the log
 * from the subscription's start up to what it has already looked at: events still ahead of the
 * cursor join the held ones in log order; events behind it (the stream has moved past them) are
 * sent at once, out of log order, without moving the cursor, so nothing is lost (a client that
 * resumes from such an event may see later ones again).
 */
import type { EventVisibility } from '../../edge/access-rules.ts';
import { MAX_CORRELATION_IDS, type CloudEvent, type EventFilter, type EventLog } from '../../log/EventLog.ts';
import { recordDelivery } from '../../telemetry/tracing.ts';
import { matchesFilter } from '../../log/event-query.ts';
import { isTerminalType } from '../../mapping/names.ts';
import { TailEvent, type TailEncoding } from './tail-event.ts';

/** Why a subscription ended. */
export type TailEndReason = 'client' | 'slow' | 'terminal' | 'shutdown' | 'error' | 'revoked' | 'expired';

/** What a subscriber writes to: one transport's stream (an SSE response, a gRPC call). */
export interface TailWriter<F> {
  /** True once the stream has ended. */
  readonly closed: boolean;
  /** Writes a frame now, or drops the client as a slow consumer (its own byte bound); false when closed. */
  send(frame: F): boolean;
  /** Writes a frame and waits for the client to read it when it must; false when closed. */
  sendPaced(frame: F): Promise<boolean>;
  /** Tells the client its resume point is no longer in the log (SSE: a `: reset` comment); optional. */
  reset?(): void;
  /** Ends the stream; idempotent. */
  close(reason: TailEndReason): void;
}

/** What a subscriber reports (each transport's metrics implement it). */
export interface TailMetrics {
  /** A resume point was found (`replayed`) or not (`reset`). */
  replay(outcome: 'replayed' | 'reset'): void;
  /** Events sent. */
  sent(count: number): void;
}

/** Events read from the log per replay query. */
export const REPLAY_PAGE_SIZE = 200;

/** What replay reads: the log's keyset pages and id lookup. */
export type ReplaySource = Pick<EventLog, 'query' | 'positionOf'>;

/** Options of `TailSubscriber`. */
export interface TailSubscriberOptions<F> {
  connection: TailWriter<F>;
  encoding: TailEncoding<F>;
  source: ReplaySource;
  /**
   * `type`, `source`, `correlationId`/`correlationIds`, `backend`. The live tail may append to
   * `correlationIds` while the subscription is open (a correlation alias learnt meanwhile).
   */
  filter: EventFilter;
  /**
   * The events the caller sees (per-caller catalogues, `AccessRules.eventsSeenBy`): the others are
   * passed over, live and in replay, as if they did not match the filter. Undefined: every event.
   */
  visible?: EventVisibility;
  /** End the stream after a terminal event when the filter has a correlation id (`sse.closeOnTerminal`). */
  closeOnTerminal: boolean;
  /** Bytes of live events held while catching up before they are dropped and re-read from the log. */
  maxHeldBytes: number;
  metrics: TailMetrics;
  /**
   * The transport's name (`sse`, `grpc`, `mcp`, `a2a`): each event sent is recorded as a delivery
   * span of it, linked to the event's trace (`messaging.destination.name`); default `stream`.
   */
  transport?: string;
}

/** One subscription's filters, cursor and replay/live seam. */
export class TailSubscriber<F> {
  readonly #options: TailSubscriberOptions<F>;
  readonly #connection: TailWriter<F>;
  #live: boolean;
  /** Position of the last event sent; events at or below it are duplicates. */
  #cursor = 0;
  /** Position of the first event the fan-out offered (any filter), the start of "live". */
  #firstOffered: number | undefined;
  #held: TailEvent[] = [];
  #heldBytes = 0;
  /** Held events were dropped: the log must be read again before going live. */
  #overflowed = false;
  /** Position of the last event the fan-out offered (any filter). */
  #lastOffered = 0;
  /** True for a subscriber that replays after a known point (its start is the replay point, once known). */
  #replays: boolean;
  /** The replay point: the position after which this subscription's events start. */
  #replayFrom: number | undefined;
  /** Aliases learnt after events went by: the log is searched for theirs before going live again. */
  #lateAliases: string[] = [];
  /** Positions sent since the first pending late alias was learnt (a replay page already in flight may have carried its events). */
  #sentSinceAlias: Set<number> | undefined;

  /** A subscriber that will replay from a `Last-Event-ID` starts in catch-up; otherwise it is live at once. */
  constructor(options: TailSubscriberOptions<F>, replay: boolean) {
    this.#options = options;
    this.#connection = options.connection;
    this.#live = !replay;
    this.#replays = replay;
  }

  /** The subscription's filter (the live tail widens its `correlationIds` when an alias is learnt). */
  get filter(): EventFilter {
    return this.#options.filter;
  }

  /** Called by the fan-out for every appended event, in log order. */
  offer(event: TailEvent): void {
    if (this.#connection.closed) return;
    this.#firstOffered ??= event.position;
    this.#lastOffered = event.position;
    if (!matchesFilter(event.keys, this.#options.filter) || !this.#sees(event.keys.backend, event.keys.type)) return;
    if (this.#live) this.#sendLive(event);
    else this.#hold(event);
  }

  /**
   * `alias` now also correlates the command this subscription follows: its filter matches it from
   * now on, and the events under it that already went by are searched for in the log and sent
   * (see the file comment). Resolves when that search is done (at once when none is needed);
   * rejects when the log cannot be read (the caller closes the stream).
   */
  followAlias(alias: string): Promise<void> {
    const ids = this.#options.filter.correlationIds;
    if (!ids || ids.includes(alias) || ids.length >= MAX_CORRELATION_IDS || this.#connection.closed) return Promise.resolve();
    ids.push(alias);
    // Nothing looked at yet: every read from now on has the alias.
    if (this.#start() === undefined) return Promise.resolve();
    this.#lateAliases.push(alias);
    this.#sentSinceAlias ??= new Set();
    if (!this.#live) return Promise.resolve(); // the catch-up loop running now searches before it goes live
    this.#live = false;
    return this.#catchUp(false);
  }

  /** The position after which this subscription's events start; undefined while nothing has been looked at. */
  #start(): number | undefined {
    if (this.#replays) return this.#replayFrom;
    return this.#firstOffered === undefined ? undefined : this.#firstOffered - 1;
  }

  /**
   * Replays the events after `lastEventId`, then goes live. An id not in the log (unknown or
   * pruned) resets the client (`TailWriter.reset`) and goes live from the moment it subscribed.
   */
  async replay(lastEventId: string): Promise<void> {
    const position = await this.#options.source.positionOf(lastEventId);
    if (this.#connection.closed) return;
    this.#options.metrics.replay(position === undefined ? 'reset' : 'replayed');
    if (position !== undefined) {
      this.#cursor = this.#replayFrom = position;
      return this.#catchUp(true);
    }
    this.#connection.reset?.();
    // Live starts with the first event offered after subscribing; held events are all after it.
    this.#cursor = this.#firstOffered === undefined ? 0 : this.#firstOffered - 1;
    this.#replays = false;
    return this.#catchUp(false);
  }

  /** Replays the events after a log position known to the caller (no lookup, no reset), then goes live. */
  async replayAfter(position: number): Promise<void> {
    if (this.#connection.closed) return;
    this.#options.metrics.replay('replayed');
    this.#cursor = this.#replayFrom = position;
    return this.#catchUp(true);
  }

  /**
   * Reads log pages (when asked to, or when held events were dropped) and searches the log for the
   * events of late aliases, then sends the held events past the cursor, and goes live the moment
   * nothing is held: that check and the switch happen in one synchronous step, so no offered event
   * can slip between them.
   */
  async #catchUp(fromLog: boolean): Promise<void> {
    let readLog = fromLog;
    while (!this.#connection.closed) {
      if (this.#lateAliases.length > 0) {
        await this.#searchLateAliases();
        continue;
      }
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
      const frame = next.frame(this.#options.encoding);
      this.#heldBytes -= this.#options.encoding.size(frame);
      if (next.position > this.#cursor) await this.#sendPaced(next.position, next.event, frame);
    }
  }

  /** Sends one page of the log after the cursor; true when more pages follow. */
  async #replayPage(): Promise<boolean> {
    const page = await this.#options.source.query(this.#options.filter, this.#cursor, REPLAY_PAGE_SIZE);
    for (const stored of page.events) {
      if (stored.position <= this.#cursor) continue;
      if (!this.#sees(stored.backend, stored.event.type)) {
        // Passed over, so the next page starts after it (a page of nothing visible still moves on).
        this.#cursor = stored.position;
        continue;
      }
      if (!(await this.#sendPaced(stored.position, stored.event, this.#options.encoding.encode(stored.event)))) return false;
    }
    return page.next !== undefined;
  }

  /**
   * Finds the events of the late aliases among those already looked at (after the start, up to the
   * cursor or the last event offered): those behind the cursor are sent now (unless a page read
   * since the alias was learnt sent them), those ahead of it are held in log order. Later events
   * reach the subscriber through the widened filter.
   */
  async #searchLateAliases(): Promise<void> {
    const aliases = this.#lateAliases.splice(0);
    const sent = this.#sentSinceAlias ?? new Set<number>();
    this.#sentSinceAlias = undefined;
    const upTo = Math.max(this.#cursor, this.#lastOffered);
    const { correlationId: _id, correlationIds: _ids, ...rest } = this.#options.filter;
    let after = this.#start() ?? 0;
    while (after < upTo && !this.#connection.closed) {
      const page = await this.#options.source.query({ ...rest, correlationIds: aliases }, after, REPLAY_PAGE_SIZE);
      for (const stored of page.events) {
        if (stored.position > upTo) return;
        if (!this.#sees(stored.backend, stored.event.type)) continue;
        if (stored.position > this.#cursor) this.#hold(new TailEvent(stored));
        else if (!sent.has(stored.position) && !(await this.#sendBehind(stored.position, stored.event, this.#options.encoding.encode(stored.event)))) return;
      }
      if (page.next === undefined || page.next <= after) return;
      after = page.next;
    }
  }

  /** Sends an event the cursor has passed (a late alias's), leaving the cursor; false when the stream is closed. */
  async #sendBehind(position: number, event: CloudEvent, frame: F): Promise<boolean> {
    this.#sentSinceAlias?.add(position);
    if (!(await this.#connection.sendPaced(frame))) return false;
    this.#options.metrics.sent(1);
    this.#delivered(event);
    return !this.#endIfTerminal(event.type);
  }

  /** Whether the caller sees an event (`visible`). */
  #sees(backend: string | undefined, type: string): boolean {
    return this.#options.visible === undefined || this.#options.visible(backend, type);
  }

  /** Holds an offered event (or a late alias's), in log order; drops them all past the byte bound. */
  #hold(event: TailEvent): void {
    const size = this.#options.encoding.size(event.frame(this.#options.encoding));
    if (this.#heldBytes + size > this.#options.maxHeldBytes) {
      // Bounded: forget them; the log still has every one and catch-up reads them from there.
      this.#held = [];
      this.#heldBytes = 0;
      this.#overflowed = true;
      return;
    }
    let at = this.#held.length;
    while (at > 0 && this.#held[at - 1].position >= event.position) at--;
    if (this.#held[at]?.position === event.position) return;
    this.#held.splice(at, 0, event);
    this.#heldBytes += size;
  }

  #sendLive(event: TailEvent): void {
    if (event.position <= this.#cursor) return;
    this.#cursor = event.position;
    this.#sentSinceAlias?.add(event.position);
    if (!this.#connection.send(event.frame(this.#options.encoding))) return;
    this.#options.metrics.sent(1);
    this.#delivered(event.event);
    this.#endIfTerminal(event.keys.type);
  }

  /** Sends at the client's pace; false when the stream is closed (or just closed on a terminal event). */
  async #sendPaced(position: number, event: CloudEvent, frame: F): Promise<boolean> {
    this.#cursor = position;
    this.#sentSinceAlias?.add(position);
    if (!(await this.#connection.sendPaced(frame))) return false;
    this.#options.metrics.sent(1);
    this.#delivered(event);
    return !this.#endIfTerminal(event.type);
  }

  /** The delivery span of one event sent (the API's no-op when tracing is off). */
  #delivered(event: CloudEvent): void {
    const transport = this.#options.transport ?? 'stream';
    recordDelivery(transport, transport, event);
  }

  /** PROTOCOL.md 4.3 rule 7 and DESIGN.md (terminal types): a command's stream ends with its outcome. */
  #endIfTerminal(type: string): boolean {
    const { closeOnTerminal, filter } = this.#options;
    if (!closeOnTerminal || (filter.correlationId === undefined && filter.correlationIds === undefined) || !isTerminalType(type)) return false;
    this.#connection.close('terminal');
    return true;
  }
}
