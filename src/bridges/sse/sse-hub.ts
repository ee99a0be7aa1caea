/**
 * The SSE hub: the registry of open streams and their limits (the shape of mercure's hub). Events
 * reach the streams through the live tail (`bridges/live-tail/`), which computes each event's
 * filter keys and SSE frame once per append, not once per stream.
 *
 * Limits (`sse.maxConnections` overall, `sse.maxConnectionsPerPrincipal` per authenticated caller;
 * without authentication every client is the same anonymous caller, so only the overall limit
 * applies) are checked before any byte of the stream is written, so a refusal is a plain 429
 * `TOO_MANY_STREAMS` with the error body.
 */
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { SseConfig } from '../../config/types.ts';
import { ProtoError } from '../../errors.ts';
import type { EventFilter } from '../../log/EventLog.ts';
import type { SseMetrics } from '../../metrics/sse.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import type { TailEncoding } from '../live-tail/tail-event.ts';
import { SseConnection, type CloseReason } from './sse-connection.ts';
import { eventFrame } from './sse-frame.ts';

/** SSE frames: the bytes of `eventFrame`, encoded once per event for every stream. */
export const SSE_ENCODING: TailEncoding<Buffer> = { encode: eventFrame, size: (frame) => frame.length };

/** Options of `SseHub`. */
export interface SseHubOptions {
  /** The live tail every stream subscribes to. */
  tail: LiveTail;
  config: SseConfig;
  metrics: SseMetrics;
  logger: Logger;
}

/** A request for a stream, as the HTTP route has parsed it. */
export interface StreamRequest {
  res: ServerResponse;
  /** The principal id the per-principal limit counts against; undefined = an unauthenticated caller (no per-caller limit). */
  principal?: string;
  filter: EventFilter;
  /** From `Last-Event-ID` or `lastEventId`: replay the events after it. */
  lastEventId?: string;
  /** The command id whose correlation aliases the stream follows (`filter.correlationIds` holds it and the known aliases). */
  aliasesFor?: string;
}

/** One open stream in the registry. */
interface OpenStream {
  principal?: string;
  connection: SseConnection;
}

/** The registry of SSE streams and their limits; the live tail feeds them. A component: `drain()`/`close()` end every stream. */
export class SseHub {
  readonly #options: SseHubOptions;
  readonly #streams = new Set<OpenStream>();
  readonly #perPrincipal = new Map<string, number>();
  #closed = false;

  /** A hub with no streams. */
  constructor(options: SseHubOptions) {
    this.#options = options;
  }

  /** Open streams. */
  get size(): number {
    return this.#streams.size;
  }

  /**
   * Opens a stream on `request.res`: checks the limits (throws 429 `TOO_MANY_STREAMS`, or 503
   * `NOT_READY` while shutting down, before writing anything), attaches it to the live tail, flushes
   * the headers; the tail replays in the background when a `lastEventId` is given.
   */
  open(request: StreamRequest): void {
    this.#admit(request.principal);
    const { config, metrics, tail } = this.#options;
    const stream: OpenStream = { principal: request.principal } as OpenStream;
    let detach = (): void => {};
    stream.connection = new SseConnection(request.res, {
      keepaliveMs: config.keepaliveMs,
      maxBufferedBytes: config.maxBufferedBytes,
      onClose: (reason) => {
        detach();
        this.#release(stream, reason);
      },
    });
    this.#register(stream);
    ({ detach } = tail.attach({
      connection: stream.connection,
      encoding: SSE_ENCODING,
      filter: request.filter,
      closeOnTerminal: config.closeOnTerminal,
      maxHeldBytes: config.maxBufferedBytes,
      metrics,
      afterId: request.lastEventId,
      aliasesFor: request.aliasesFor,
    }));
    stream.connection.open();
  }

  /** Ends every stream now (shutdown begins; the HTTP drain need not wait for them). */
  drain(): void {
    this.close();
  }

  /** Ends every stream with a final `: shutdown` comment. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const stream of [...this.#streams]) stream.connection.close('shutdown');
  }

  #admit(principal: string | undefined): void {
    const { maxConnections, maxConnectionsPerPrincipal } = this.#options.config;
    if (this.#closed || this.#options.tail.closed) throw new ProtoError('NOT_READY', 'the gateway is shutting down');
    if (this.#streams.size >= maxConnections) {
      throw new ProtoError('TOO_MANY_STREAMS', `the gateway serves at most ${maxConnections} streams`, { limit: 'maxConnections', max: maxConnections });
    }
    if (principal !== undefined && (this.#perPrincipal.get(principal) ?? 0) >= maxConnectionsPerPrincipal) {
      throw new ProtoError('TOO_MANY_STREAMS', `at most ${maxConnectionsPerPrincipal} streams per caller`, {
        limit: 'maxConnectionsPerPrincipal',
        max: maxConnectionsPerPrincipal,
      });
    }
  }

  #register(stream: OpenStream): void {
    this.#streams.add(stream);
    if (stream.principal !== undefined) this.#perPrincipal.set(stream.principal, (this.#perPrincipal.get(stream.principal) ?? 0) + 1);
    this.#options.metrics.opened();
  }

  #releasePrincipal(principal: string): void {
    const held = (this.#perPrincipal.get(principal) ?? 1) - 1;
    if (held > 0) this.#perPrincipal.set(principal, held);
    else this.#perPrincipal.delete(principal);
  }

  #release(stream: OpenStream, reason: CloseReason): void {
    if (!this.#streams.delete(stream)) return;
    if (stream.principal !== undefined) this.#releasePrincipal(stream.principal);
    this.#options.metrics.closed();
    if (reason === 'slow') this.#options.metrics.slowConsumer();
  }
}
