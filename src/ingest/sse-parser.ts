/**
 * An incremental parser of `text/event-stream` (WHATWG HTML, "Server-sent events", 9.2.6
 * "Interpreting an event stream"): UTF-8 decoding across chunk boundaries, one leading BOM
 * dropped, lines ended by CRLF, LF or CR (a CRLF split across chunks is one line end), comments,
 * multi-line `data`, `event`, `id` (ignored when it contains NULL), `retry`; unknown fields ignored;
 * an unterminated event at the end of the stream is discarded.
 *
 * Bounded: a line, or the data of one event, longer than `maxLength` characters is an
 * `SseLimitError` (the caller drops the connection), or with `oversized: 'skip'` the event is
 * dispatched without its data and marked `oversized` (the caller counts it and goes on: a stream
 * that replays from its last id never meets the same event again).
 */

/** One dispatched event. */
export interface SseMessage {
  /** The `event` field, `message` when absent. */
  event: string;
  /** The `data` lines joined with `\n`. */
  data: string;
  /** The last event id in effect (it persists across events, as in the spec). */
  lastEventId: string;
  /** With `oversized: 'skip'`: the event's data was beyond the bound and dropped (`data` is empty). */
  oversized?: boolean;
}

/** A line or an event's data beyond the parser's bound. */
export class SseLimitError extends Error {
  constructor(limit: number) {
    super(`SSE line or event data longer than ${limit} characters`);
    this.name = 'SseLimitError';
  }
}

/** Default bound of a line and of one event's data: 1 MiB of characters. */
export const DEFAULT_SSE_MAX_LENGTH = 1024 * 1024;

/** Feed it chunks with `push`; it returns the events each chunk completes. */
export class SseParser {
  readonly #maxLength: number;
  readonly #decoder = new TextDecoder('utf-8');
  #line = '';
  #pendingCr = false;
  #started = false;
  #data = '';
  #hasData = false;
  #eventType = '';
  /** `data` lines of the event being read (an empty first line still counts for the `\n` join). */
  #dataLines = 0;
  #lastEventId = '';
  #retryMs: number | undefined;
  readonly #skip: boolean;
  /** The event being read went beyond the bound (skip mode): its data is dropped. */
  #oversized = false;
  /** The line being read went beyond the bound (skip mode): its rest is dropped up to its end. */
  #skippingLine = false;

  /**
   * `maxLength`: bound of a line and of one event's data, in characters (default 1 MiB);
   * `oversized`: `throw` (default) an `SseLimitError`, or `skip` the event (see above).
   */
  constructor(options: { maxLength?: number; oversized?: 'throw' | 'skip' } = {}) {
    this.#maxLength = options.maxLength ?? DEFAULT_SSE_MAX_LENGTH;
    this.#skip = options.oversized === 'skip';
  }

  /** The reconnection time the server last asked for with `retry:`, in milliseconds. */
  get retryMs(): number | undefined {
    return this.#retryMs;
  }

  /** The last event id in effect (`id:` of the stream so far). */
  get lastEventId(): string {
    return this.#lastEventId;
  }

  /** Parses one chunk; returns the events it completed (often none). Throws `SseLimitError`. */
  push(chunk: Uint8Array | string): SseMessage[] {
    const text = typeof chunk === 'string' ? chunk : this.#decoder.decode(chunk, { stream: true });
    return this.#scan(this.#stripBom(text));
  }

  /** Ends the stream: flushes the decoder; a final unterminated event is discarded (spec). */
  end(): SseMessage[] {
    const messages = this.#scan(this.#decoder.decode());
    this.#line = '';
    this.#skippingLine = false;
    this.#data = '';
    this.#dataLines = 0;
    this.#hasData = false;
    this.#oversized = false;
    this.#eventType = '';
    return messages;
  }

  #stripBom(text: string): string {
    if (this.#started || text === '') return text;
    this.#started = true;
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }

  #scan(text: string): SseMessage[] {
    const messages: SseMessage[] = [];
    let start = 0;
    if (this.#pendingCr && text.length > 0) {
      this.#pendingCr = false;
      if (text.charCodeAt(0) === 0x0a) start = 1;
    }
    for (let i = start; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      const skipped = this.#skippingLine;
      const line = skipped ? '' : this.#line + text.slice(start, i);
      this.#line = '';
      this.#skippingLine = false;
      const message = skipped || !this.#withinBound(line.length) ? undefined : this.#processLine(line);
      if (message) messages.push(message);
      if (c === 0x0d) {
        if (i + 1 === text.length) this.#pendingCr = true;
        else if (text.charCodeAt(i + 1) === 0x0a) i++;
      }
      start = i + 1;
    }
    if (!this.#skippingLine) {
      this.#line += text.slice(start);
      if (!this.#withinBound(this.#line.length)) {
        this.#line = '';
        this.#skippingLine = true;
      }
    }
    return messages;
  }

  #processLine(line: string): SseMessage | undefined {
    if (line === '') return this.#dispatch();
    if (line.charCodeAt(0) === 0x3a) return undefined; // ':' starts a comment (keepalives)
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.charCodeAt(0) === 0x20) value = value.slice(1);
    this.#applyField(field, value);
    return undefined;
  }

  #applyField(field: string, value: string): void {
    switch (field) {
      case 'data':
        this.#hasData = true;
        if (this.#oversized) break;
        this.#data = this.#dataLines > 0 ? `${this.#data}\n${value}` : value;
        this.#dataLines += 1;
        if (!this.#withinBound(this.#data.length)) this.#data = '';
        break;
      case 'event':
        this.#eventType = value;
        break;
      case 'id':
        if (!value.includes('\0')) this.#lastEventId = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.#retryMs = Number(value);
        break;
    }
  }

  #dispatch(): SseMessage | undefined {
    const event = this.#eventType || 'message';
    const message = !this.#hasData ? undefined
      : this.#oversized ? { event, data: '', lastEventId: this.#lastEventId, oversized: true }
      : { event, data: this.#data, lastEventId: this.#lastEventId };
    this.#data = '';
    this.#dataLines = 0;
    this.#hasData = false;
    this.#oversized = false;
    this.#eventType = '';
    return message;
  }

  /** True within the bound; beyond it throws, or (skip mode) marks the event oversized and returns false. */
  #withinBound(length: number): boolean {
    if (length <= this.#maxLength) return true;
    if (!this.#skip) throw new SseLimitError(this.#maxLength);
    this.#oversized = true;
    this.#hasData = true;
    return false;
  }
}
