/**
 * An incremental parser of `text/event-stream` (WHATWG HTML, "Server-sent events", 9.2.6
 * "Interpreting an event stream"): UTF-8 decoding across chunk boundaries, one leading BOM
 * dropped, lines ended by CRLF, LF or CR (a CRLF split across chunks is one line end), comments,
 * multi-line `data`, `event`, `id` (ignored when it contains NULL), `retry`; unknown fields ignored;
 * an unterminated event at the end of the stream is discarded.
 *
 * Bounded: a line, or the data of one event, longer than `maxLength` characters is an
 * `SseLimitError` (the caller drops the connection).
 */

/** One dispatched event. */
export interface SseMessage {
  /** The `event` field, `message` when absent. */
  event: string;
  /** The `data` lines joined with `\n`. */
  data: string;
  /** The last event id in effect (it persists across events, as in the spec). */
  lastEventId: string;
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
  #lastEventId = '';
  #retryMs: number | undefined;

  /** `maxLength`: bound of a line and of one event's data, in characters (default 1 MiB). */
  constructor(options: { maxLength?: number } = {}) {
    this.#maxLength = options.maxLength ?? DEFAULT_SSE_MAX_LENGTH;
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
    this.#data = '';
    this.#hasData = false;
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
      const line = this.#line + text.slice(start, i);
      this.#line = '';
      this.#checkLength(line.length);
      const message = this.#processLine(line);
      if (message) messages.push(message);
      if (c === 0x0d) {
        if (i + 1 === text.length) this.#pendingCr = true;
        else if (text.charCodeAt(i + 1) === 0x0a) i++;
      }
      start = i + 1;
    }
    this.#line += text.slice(start);
    this.#checkLength(this.#line.length);
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
        this.#data = this.#hasData ? `${this.#data}\n${value}` : value;
        this.#hasData = true;
        this.#checkLength(this.#data.length);
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
    const message = this.#hasData ? { event: this.#eventType || 'message', data: this.#data, lastEventId: this.#lastEventId } : undefined;
    this.#data = '';
    this.#hasData = false;
    this.#eventType = '';
    return message;
  }

  #checkLength(length: number): void {
    if (length > this.#maxLength) throw new SseLimitError(this.#maxLength);
  }
}
