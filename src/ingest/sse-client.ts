/**
 * The client side of `GET /events/stream` (PROTOCOL.md 4.3) over undici: opens the stream with
 * `Accept: text/event-stream` and `Last-Event-ID`, checks the answer, then yields the events of
 * each received chunk. Bounded: a quiet connection (no byte, not even a keepalive comment, for
 * `idleTimeoutMs`) and an over-long line are errors that drop the connection.
 */
import { request, type Dispatcher } from 'undici';
import { ProtoError } from '../errors.ts';
import { pathOf, transportError } from './http-json.ts';
import { SseParser, type SseMessage } from './sse-parser.ts';

/** Options of `openSseStream`. */
export interface SseStreamOptions {
  headers?: Record<string, string>;
  /** Sent as `Last-Event-ID` when set (PROTOCOL.md 4.3 rule 4). */
  lastEventId?: string;
  /** Aborts the connection (pause, close). */
  signal?: AbortSignal;
  /** Deadline for the response headers, in milliseconds (default 10 000). */
  headersTimeoutMs?: number;
  /** Longest silence accepted between two chunks, in milliseconds (default 60 000). */
  idleTimeoutMs?: number;
  /** Bound of an SSE line and of one event's data, in characters (default 1 MiB). */
  maxLength?: number;
  /** What an event beyond `maxLength` does: `throw` (drop the connection; default) or `skip` (dispatched marked `oversized`). */
  oversized?: 'throw' | 'skip';
  dispatcher?: Dispatcher;
}

/** An open event stream. */
export interface SseStream {
  /** The events of each chunk, in order; ends when the server closes the stream. Chunks without events yield `[]` (liveness). */
  batches(): AsyncIterable<SseMessage[]>;
  /** Drops the connection. Idempotent. */
  close(): void;
}

/** Opens `url` as an event stream; throws `ProtoError` (`BACKEND_UNAVAILABLE`) unless it answers 200 `text/event-stream`. */
export async function openSseStream(url: string, options: SseStreamOptions = {}): Promise<SseStream> {
  const headers: Record<string, string> = { ...options.headers, accept: 'text/event-stream' };
  if (options.lastEventId) headers['last-event-id'] = options.lastEventId;
  const response = await request(url, {
    method: 'GET',
    headers,
    signal: options.signal,
    headersTimeout: options.headersTimeoutMs ?? 10_000,
    bodyTimeout: options.idleTimeoutMs ?? 60_000,
    dispatcher: options.dispatcher,
  }).catch((err: unknown) => {
    if (options.signal?.aborted) throw options.signal.reason;
    throw transportError(err, url);
  });
  const contentType = String(response.headers['content-type'] ?? '');
  if (response.statusCode !== 200 || !contentType.toLowerCase().startsWith('text/event-stream')) {
    await response.body.dump().catch(() => undefined);
    throw new ProtoError('BACKEND_UNAVAILABLE', `GET ${pathOf(url)} answered ${response.statusCode} ${contentType}`, { status: response.statusCode });
  }
  const parser = new SseParser({ maxLength: options.maxLength, oversized: options.oversized });
  return {
    async *batches() {
      for await (const chunk of response.body) yield parser.push(chunk as Buffer);
      yield parser.end();
    },
    close() {
      if (!response.body.destroyed) response.body.destroy();
    },
  };
}
