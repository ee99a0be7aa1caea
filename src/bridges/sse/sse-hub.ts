/**
 * The SSE hub: the registry of open streams and their limits (the shape of mercure's hub). Events
 * reach the streams through the live tail (`bridges/live-tail/`), which computes each event's
 * filter keys and SSE frame once per append, not once per stream.
 *
 * Limits: every stream holds a slot of the admission path's stream pool (`sse.maxConnections`
 * overall, `sse.maxConnectionsPerPrincipal` per caller, shared with gRPC, MCP and A2A streams),
 * taken before any byte of the stream is written, so a refusal is a plain 429 `TOO_MANY_STREAMS`
 * (the caller's share) or 503 `STREAMS_EXHAUSTED` (the whole pool) with the error body.
 */
import type { EventVisibility } from '../../edge/access-rules.ts';
import type { ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { SseConfig } from '../../config/types.ts';
import type { Principal } from '../../edge/credentials.ts';
import type { QuotaPool, Slot, SlotEnd } from '../../edge/quota.ts';
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
  /** The stream pool of the admission path (shared by every push transport). */
  streams: QuotaPool;
  metrics: SseMetrics;
  logger: Logger;
}

/** A request for a stream, as the HTTP route has parsed it. */
export interface StreamRequest {
  res: ServerResponse;
  /** The caller, whose stream quota the stream counts against. */
  principal: Principal;
  filter: EventFilter;
  /** The events its caller sees (per-caller catalogues); undefined: every event. */
  visible?: EventVisibility;
  /** From `Last-Event-ID` or `lastEventId`: replay the events after it. */
  lastEventId?: string;
  /** The command id whose correlation aliases the stream follows (`filter.correlationIds` holds it and the known aliases). */
  aliasesFor?: string;
}

/** One open stream in the registry. */
interface OpenStream {
  slot: Slot;
  connection: SseConnection;
}

/** The registry of SSE streams and their limits; the live tail feeds them. A component: `drain()`/`close()` end every stream. */
export class SseHub {
  #options: SseHubOptions;
  readonly #streams = new Set<OpenStream>();
  #closed = false;

  /** A hub with no streams. */
  constructor(options: SseHubOptions) {
    this.#options = options;
  }

  /**
   * Takes a reload's `sse` settings: streams opened from now on use them (keepalive, buffer bound,
   * `closeOnTerminal`); open streams keep theirs. The stream pool's bounds are the admission's.
   */
  reconfigure(config: SseConfig): void {
    this.#options = { ...this.#options, config };
  }

  /** Open streams. */
  get size(): number {
    return this.#streams.size;
  }

  /**
   * Opens a stream on `request.res`: checks the limits (throws 429 `TOO_MANY_STREAMS`, 503 `STREAMS_EXHAUSTED`, or 503
   * `NOT_READY` while shutting down, before writing anything), attaches it to the live tail, flushes
   * the headers; the tail replays in the background when a `lastEventId` is given.
   */
  open(request: StreamRequest): void {
    const stream = {} as OpenStream;
    // A reload that revokes the caller's credentials, or its token's expiry, ends the stream.
    stream.slot = this.#admit(request.principal, (reason) => stream.connection?.close(reason));
    const { config, metrics, tail } = this.#options;
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
      transport: 'sse',
      connection: stream.connection,
      encoding: SSE_ENCODING,
      filter: request.filter,
      visible: request.visible,
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

  #admit(principal: Principal, end: (reason: SlotEnd) => void): Slot {
    if (this.#closed || this.#options.tail.closed) throw new ProtoError('NOT_READY', 'the gateway is shutting down');
    return this.#options.streams.take(principal, end);
  }

  #register(stream: OpenStream): void {
    this.#streams.add(stream);
    this.#options.metrics.opened();
  }

  #release(stream: OpenStream, reason: CloseReason): void {
    if (!this.#streams.delete(stream)) return;
    stream.slot.release();
    this.#options.metrics.closed();
    if (reason === 'slow') this.#options.metrics.slowConsumer();
  }
}
