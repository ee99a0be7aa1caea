/**
 * The follower of one proto backend's events (DESIGN.md, `events: { follow: poll | stream }`).
 *
 * poll: `GET {endpoint}events?after=<cursor>&limit=<n>` every interval, following `nextCursor`
 * until a page has none (at most `maxPagesPerPoll` pages per poll). It resumes from the last cursor
 * it was given — the one that requested the last page — so the next poll re-reads that page and
 * the log drops what it already holds. A backend that never gives a cursor is resumed by
 * `from=<time of the newest event read>` (inclusive).
 *
 * stream: opens `GET {endpoint}events/stream` (with `Last-Event-ID`), then catches up by polling
 * from the poll checkpoint (the stream is not lossless, PROTOCOL.md 4.3 rule 5), then reads the
 * stream; it reconnects after the stream ends or fails. Stream events move only `lastEventId`, never
 * the poll position, so every catch-up covers whatever a dropped stream lost.
 *
 * The pages of one poll (up to `POLL_BATCH_EVENTS` events), and each chunk of the stream (what
 * arrived since the last append), are appended together with the checkpoint `follow:{backendId}`
 * (JSON `{ cursor?, fromTime?, lastEventId? }`) in one `append()`. Events are checked against the
 * envelope rules (a malformed one is skipped, logged, counted) and against `events.maxEventBytes`
 * (a larger one is refused once, counted; on the stream it is skipped without ending the
 * connection, so a replay from the last id never meets it again), and stored as received except
 * for `rewrite`.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { ProtoError } from '../errors.ts';
import type { CloudEvent, EventLog } from '../log/EventLog.ts';
import type { IngestMetrics } from '../metrics/ingest.ts';
import { checkEventEnvelope } from './envelope.ts';
import { DEFAULT_MAX_EVENT_BYTES, eventBytes, refuseTooLarge } from './event-size.ts';
import { failureMessage, getJson } from './http-json.ts';
import { PollLoop } from './poll-loop.ts';
import { openSseStream } from './sse-client.ts';
import type { SseMessage } from './sse-parser.ts';
import { appendTraced } from '../log/traced-append.ts';
import { inSpan } from '../telemetry/tracing.ts';
import { ingestSpan } from './ingest-span.ts';

/** Options of a `ProtoFollower`. */
export interface ProtoFollowerOptions {
  backendId: string;
  /** The backend's current endpoint URL, ending in `/` (DESIGN.md, Backend URLs); read before every request. */
  endpoint: () => string;
  log: EventLog;
  mode: 'poll' | 'stream';
  /** Poll period (poll mode), reconnection delay after a stream ends (stream mode); also the first backoff delay. Milliseconds. */
  intervalMs: number;
  /** Headers added to every request to the backend. */
  headers: Record<string, string>;
  /** Rewrites backend URLs in `source`/`dataschema` to their public form; must not mutate its argument. */
  rewrite: (event: CloudEvent) => CloudEvent;
  logger: Logger;
  metrics: IngestMetrics;
  /** `limit` of each page request (default 100). */
  pageLimit?: number;
  /** Pages read per poll at most; the next poll continues from the checkpoint (default 100). */
  maxPagesPerPoll?: number;
  /** Deadline of a page request and of the stream's response headers, in milliseconds (default 10 000). */
  timeoutMs?: number;
  /** Longest silence accepted on the stream before reconnecting, in milliseconds (default 60 000). */
  streamIdleTimeoutMs?: number;
  /** Ceiling of the backoff after failures, in milliseconds (default 30 000). */
  maxBackoffMs?: number;
  /** Largest page body accepted, in bytes (default 16 MiB). */
  maxBodyBytes?: number;
  /** Bound of an SSE line and of one event's data, in characters (default `maxEventBytes`); a longer event is skipped and counted as too large. */
  maxSseLength?: number;
  /** `events.maxEventBytes`: one event's JSON at most; larger ones are refused once, counted (default 2 MiB). */
  maxEventBytes?: number;
  dispatcher?: Dispatcher;
}

/** The follower's checkpoint (JSON under `follow:{backendId}`). */
export interface FollowState {
  /** The last `nextCursor` given by the backend (the cursor of the last page read). */
  cursor?: string;
  /** `time` of the newest event read by polling (resume point of a backend without cursors). */
  fromTime?: string;
  /** The last SSE event id received on the stream. */
  lastEventId?: string;
}

/** The checkpoint key of a proto backend's follower: `follow:{backendId}`. */
export function followCheckpointKey(backendId: string): string {
  return `follow:${backendId}`;
}

const DEFAULT_PAGE_LIMIT = 100;
const DEFAULT_MAX_PAGES = 100;

/** Events of consecutive pages appended together at most (one transaction, one checkpoint write). */
export const POLL_BATCH_EVENTS = 1000;

/** Follows one proto backend's events into the log; `start()` begins, `close()` stops (idempotent). */
export class ProtoFollower {
  readonly #options: ProtoFollowerOptions;
  readonly #key: string;
  readonly #logger: Logger;
  readonly #loop: PollLoop;
  #lastError: string | undefined;

  constructor(options: ProtoFollowerOptions) {
    this.#options = options;
    this.#key = followCheckpointKey(options.backendId);
    this.#logger = options.logger.child({ backend: options.backendId, follow: options.mode });
    this.#loop = new PollLoop({
      intervalMs: options.intervalMs,
      maxBackoffMs: options.maxBackoffMs,
      run: (signal) => (options.mode === 'stream' ? this.#followStream(signal) : this.pollOnce(signal).then(() => undefined)),
      onError: (err, retryInMs) => this.#failed(err, retryInMs),
    });
  }

  /** The latest failure to follow (no address), undefined once a page is read again. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** Starts following at once. Idempotent. */
  start(): void {
    this.#loop.start();
  }

  /** Stops following until `resume()`; the request or stream in flight is aborted. */
  pause(): void {
    this.#loop.pause();
  }

  /** Follows again after `pause()`. */
  resume(): void {
    this.#loop.resume();
  }

  /** Stops for good: aborts the request or stream in flight and waits for it. Idempotent. */
  close(): Promise<void> {
    return this.#loop.close();
  }

  /**
   * One poll: pages from the checkpoint until one has no `nextCursor` or `maxPagesPerPoll` is
   * reached. Returns whether it reached the last page. Throws on a backend failure.
   */
  async pollOnce(signal?: AbortSignal): Promise<boolean> {
    const { complete } = await this.#catchUp(await this.#readState(), signal);
    return complete;
  }

  /**
   * Reads pages from `state` and appends them in batches (issue 29): the events of consecutive
   * pages go into one `append()` with the checkpoint of the last of them, once `POLL_BATCH_EVENTS`
   * are read, at the last page, and before a failure is thrown (what was read is kept; if that
   * append fails too, the next poll reads those pages again from the stored checkpoint).
   */
  async #catchUp(state: FollowState, signal?: AbortSignal): Promise<{ complete: boolean; state: FollowState }> {
    const maxPages = this.#options.maxPagesPerPoll ?? DEFAULT_MAX_PAGES;
    let stored = state;
    let batch: CloudEvent[] = [];
    const flush = async (): Promise<void> => {
      await this.#store(batch, stored, state);
      stored = state;
      batch = [];
    };
    try {
      for (let page = 0; page < maxPages; page++) {
        const { next, more, events } = await this.#readPage(state, signal);
        this.#lastError = undefined;
        state = next;
        batch.push(...events);
        if (!more) {
          await flush();
          return { complete: true, state };
        }
        if (batch.length >= POLL_BATCH_EVENTS) await flush();
      }
      await flush();
      return { complete: false, state };
    } catch (err) {
      if (stored !== state) await flush().catch(() => undefined);
      throw err;
    }
  }

  /** Reads and checks one page; `more` when the backend gave a new `nextCursor`. */
  async #readPage(state: FollowState, signal?: AbortSignal): Promise<{ next: FollowState; more: boolean; events: CloudEvent[] }> {
    let body: unknown;
    try {
      body = await this.#fetchPage(state, signal);
    } catch (err) {
      if (state.cursor === undefined || !isRefusal(err)) throw err;
      // The backend no longer knows our cursor (its log was reset, or its cursor format changed):
      // resume by time instead; the events read again are de-duplicated by id.
      this.#logger.warn({ status: (err as ProtoError).details?.status }, 'backend refused the stored cursor; resuming from the newest event time');
      state = { ...state, cursor: undefined };
      body = await this.#fetchPage(state, signal);
    }
    const list = eventListOf(body);
    const events = this.#accept(list.events);
    const next: FollowState = { ...state, fromTime: newestTime(state.fromTime, events) };
    if (list.nextCursor !== undefined) next.cursor = list.nextCursor;
    this.#options.metrics.markRead(this.#options.backendId);
    return { next, more: list.nextCursor !== undefined && list.nextCursor !== state.cursor, events };
  }

  #fetchPage(state: FollowState, signal?: AbortSignal): Promise<unknown> {
    return getJson(this.#pageUrl(state), {
      headers: this.#options.headers,
      timeoutMs: this.#options.timeoutMs,
      maxBodyBytes: this.#options.maxBodyBytes,
      signal,
      dispatcher: this.#options.dispatcher,
    });
  }

  #pageUrl(state: FollowState): string {
    const url = new URL(`${this.#base()}events`);
    url.searchParams.set('limit', String(this.#options.pageLimit ?? DEFAULT_PAGE_LIMIT));
    if (state.cursor !== undefined) url.searchParams.set('after', state.cursor);
    else if (state.fromTime !== undefined) url.searchParams.set('from', state.fromTime);
    return url.toString();
  }

  /** Stream mode, one connection: open, catch up by polling, then read until the stream ends. */
  async #followStream(signal: AbortSignal): Promise<void> {
    let state = await this.#readState();
    const stream = await openSseStream(`${this.#base()}events/stream`, {
      headers: this.#options.headers,
      lastEventId: state.lastEventId,
      signal,
      headersTimeoutMs: this.#options.timeoutMs,
      idleTimeoutMs: this.#options.streamIdleTimeoutMs,
      maxLength: this.#options.maxSseLength ?? this.#maxEventBytes(),
      oversized: 'skip',
      dispatcher: this.#options.dispatcher,
    });
    try {
      // The stream is open first so that nothing produced during the catch-up falls between the two.
      const caughtUp = await this.#catchUp(state, signal);
      if (!caughtUp.complete) return; // more history than one catch-up reads: reconnect and go on
      state = caughtUp.state;
      for await (const messages of stream.batches()) {
        this.#options.metrics.markRead(this.#options.backendId);
        if (messages.length > 0) state = await this.#storeMessages(messages, state);
      }
      this.#logger.info('event stream ended by the backend; reconnecting');
    } finally {
      stream.close();
    }
  }

  async #storeMessages(messages: SseMessage[], state: FollowState): Promise<FollowState> {
    const { metrics, backendId } = this.#options;
    for (const message of messages) if (message.oversized) refuseTooLarge(metrics, this.#logger, backendId, this.#maxEventBytes(), message.lastEventId);
    const events = this.#accept(messages.filter((message) => !message.oversized).map((message) => parseData(message.data)));
    const lastEventId = messages[messages.length - 1].lastEventId;
    const next: FollowState = lastEventId ? { ...state, lastEventId } : state;
    await this.#store(events, state, next);
    return next;
  }

  /** Envelope check and rewrite; malformed events are skipped, logged and counted. */
  #accept(items: unknown[]): CloudEvent[] {
    const events: CloudEvent[] = [];
    for (const item of items) {
      if (isCatalogueEntry(item)) continue; // GET /events may list the catalogue (PROTOCOL.md 4.2)
      const bytes = eventBytes(item);
      if (bytes > this.#maxEventBytes()) {
        refuseTooLarge(this.#options.metrics, this.#logger, this.#options.backendId, this.#maxEventBytes(), (item as { id?: unknown } | null)?.id, bytes);
        continue;
      }
      const checked = checkEventEnvelope(item);
      const event = checked.ok ? this.#rewrite(checked.event) : undefined;
      if (event) events.push(event);
      else this.#malformed(item, checked.ok ? 'rewrite failed' : checked.reason);
    }
    return events;
  }

  #maxEventBytes(): number {
    return this.#options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
  }

  #rewrite(event: CloudEvent): CloudEvent | undefined {
    try {
      return this.#options.rewrite(event);
    } catch (err) {
      this.#logger.error({ err: (err as Error)?.message, id: event.id }, 'event rewrite threw');
      return undefined;
    }
  }

  #malformed(item: unknown, reason: string): void {
    this.#options.metrics.malformed.inc({ backend: this.#options.backendId });
    const id = typeof item === 'object' && item !== null ? (item as { id?: unknown }).id : undefined;
    this.#logger.warn({ id: typeof id === 'string' ? id.slice(0, 200) : undefined, reason }, 'malformed backend event skipped');
  }

  /** Appends `events` with the new checkpoint in one call (or only the checkpoint when no event came). */
  async #store(events: CloudEvent[], before: FollowState, after: FollowState): Promise<void> {
    const { backendId, log, metrics } = this.#options;
    const value = JSON.stringify(after);
    const checkpoint = value === JSON.stringify(before) ? undefined : { key: this.#key, value };
    if (events.length > 0) {
      const result = await inSpan(ingestSpan(backendId, events, 'follow'), () => appendTraced(log, events.map((event) => ({ backend: backendId, event })), checkpoint));
      metrics.countAppend(backendId, result);
    } else if (checkpoint) {
      await log.saveCheckpoint(checkpoint);
    }
    metrics.markRead(backendId);
  }

  async #readState(): Promise<FollowState> {
    const stored = await this.#options.log.checkpoint(this.#key);
    if (stored === undefined) return {};
    try {
      return followStateOf(JSON.parse(stored));
    } catch {
      this.#logger.warn({ key: this.#key }, 'unreadable follow checkpoint ignored; following from the start');
      return {};
    }
  }

  #base(): string {
    const endpoint = this.#options.endpoint();
    return endpoint.endsWith('/') ? endpoint : `${endpoint}/`;
  }

  #failed(err: unknown, retryInMs: number): void {
    this.#lastError = failureMessage(err);
    this.#options.metrics.errors.inc({ backend: this.#options.backendId });
    this.#logger.warn({ err: (err as Error)?.message ?? String(err), retryInMs }, 'following backend events failed');
  }
}

/** The `eventList` of a page (PROTOCOL.md 2.7); anything else is a backend failure. */
function eventListOf(body: unknown): { events: unknown[]; nextCursor?: string } {
  const list = body as { events?: unknown; nextCursor?: unknown } | null;
  if (typeof list !== 'object' || list === null || !Array.isArray(list.events)) {
    throw new ProtoError('BACKEND_UNAVAILABLE', 'GET /events did not answer an event list');
  }
  const nextCursor = typeof list.nextCursor === 'string' && list.nextCursor !== '' ? list.nextCursor : undefined;
  return { events: list.events, nextCursor };
}

/** A catalogue entry (PROTOCOL.md 2.7) rather than an event: `schema` and `version`, no `specversion`. */
function isCatalogueEntry(item: unknown): boolean {
  if (typeof item !== 'object' || item === null) return false;
  const entry = item as Record<string, unknown>;
  return entry.specversion === undefined && typeof entry.schema === 'string' && typeof entry.version === 'string';
}

/** The SSE data as JSON, or the raw text (which the envelope check then rejects). */
function parseData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return data;
  }
}

function newestTime(current: string | undefined, events: CloudEvent[]): string | undefined {
  let newest = current;
  for (const event of events) {
    if (newest === undefined || Date.parse(event.time) > Date.parse(newest)) newest = event.time;
  }
  return newest;
}

function followStateOf(value: unknown): FollowState {
  const state: FollowState = {};
  const raw = (typeof value === 'object' && value !== null ? value : {}) as Record<string, unknown>;
  if (typeof raw.cursor === 'string') state.cursor = raw.cursor;
  if (typeof raw.fromTime === 'string') state.fromTime = raw.fromTime;
  if (typeof raw.lastEventId === 'string') state.lastEventId = raw.lastEventId;
  return state;
}

/** A 4xx answer: the backend understood the request and refused it (as opposed to being down). */
function isRefusal(err: unknown): boolean {
  const status = err instanceof ProtoError ? err.details?.status : undefined;
  return typeof status === 'number' && status >= 400 && status < 500;
}
