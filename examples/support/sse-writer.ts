/**
 * Server-sent events over a `node:http` response (HTML Living Standard, 9.2 Server-sent events):
 * headers flushed at once, one write per event so nothing waits in a buffer, keepalive comments,
 * and a bound on what a slow client may leave unread.
 */
import type { ServerResponse } from 'node:http';

/** An open SSE response. */
export interface SseWriter {
  /** Sends one event: `id: …` (if given) and `data: …` lines, then the blank line that dispatches it. */
  send(data: string, id?: string): void;
  /** Sends a comment line (`: text`), which clients ignore; used for keepalives. */
  comment(text: string): void;
  /** Ends the response; safe to call twice. */
  end(): void;
  /** True once ended, by us or by the client going away. */
  readonly closed: boolean;
}

/** Options of `openSse`. */
export interface SseOptions {
  /** Interval of `: keepalive` comments, in ms; 0 disables. Default 15 000. */
  keepaliveMs?: number;
  /** Unsent bytes a client may accumulate before it is dropped (default 1 MiB). */
  maxBufferedBytes?: number;
  /** Called once when the stream ends, whoever ended it. */
  onClose?: () => void;
}

/** Writes the SSE response headers, flushes them, and returns the writer. */
export function openSse(res: ServerResponse, options: SseOptions = {}): SseWriter {
  const { keepaliveMs = 15_000, maxBufferedBytes = 1 << 20, onClose } = options;
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    // Tells fronting proxies (nginx) not to buffer the stream.
    'x-accel-buffering': 'no',
  });
  res.flushHeaders();
  let closed = false;
  const keepalive = keepaliveMs > 0 ? setInterval(() => write(': keepalive\n\n'), keepaliveMs) : undefined;

  function finish(): void {
    if (closed) return;
    closed = true;
    clearInterval(keepalive);
    onClose?.();
  }

  function write(text: string): void {
    if (closed) return;
    // A client that does not read is dropped rather than buffered without limit.
    if (res.writableLength > maxBufferedBytes) return writer.end();
    res.write(text);
  }

  res.on('close', finish);
  const writer: SseWriter = {
    send(data, id) {
      const lines = data.split(/\r\n|\r|\n/).map((line) => `data: ${line}\n`).join('');
      write(`${id === undefined ? '' : `id: ${id}\n`}${lines}\n`);
    },
    comment(text) {
      write(`: ${text}\n\n`);
    },
    end() {
      if (closed) return;
      finish();
      res.end();
    },
    get closed() {
      return closed;
    },
  };
  return writer;
}
