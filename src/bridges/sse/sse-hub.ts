/**
 * The SSE hub: the registry of open streams, their limits, and the one live subscription to the
 * event source that fans every appended event out to them (the shape of mercure's hub). Each
 * event's filter keys and frame are computed once per append, not once per stream.
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
import { MAX_CORRELATION_IDS, type EventFilter, type EventLog, type StoredEvent } from '../../log/EventLog.ts';
import { eventKeys } from '../../log/event-query.ts';
import type { SseMetrics } from '../../metrics/sse.ts';
import { SseConnection, type CloseReason } from './sse-connection.ts';
import { eventFrame } from './sse-frame.ts';
import { SseSubscriber, type OutgoingEvent } from './sse-subscriber.ts';

/**
 * Where streams get their events (the hub's transport): live appends, keyset pages and id lookup.
 * The event log is one; a store that fans out across replicas (Redis) is another.
 */
export type StreamSource = Pick<EventLog, 'subscribe' | 'query' | 'positionOf'>;

/** Options of `SseHub`. */
export interface SseHubOptions {
  source: StreamSource;
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
  /**
   * The command id whose correlation aliases the stream follows (`filter.correlationIds` holds it and
   * the aliases known at open; `addAlias` appends the ones learnt later).
   */
  aliasesFor?: string;
}

/** One open stream in the registry. */
interface OpenStream {
  principal?: string;
  filter: EventFilter;
  aliasesFor?: string;
  connection: SseConnection;
  subscriber: SseSubscriber;
}

/** The registry and fan-out of SSE streams. A component: `drain()`/`close()` end every stream. */
export class SseHub {
  readonly #options: SseHubOptions;
  readonly #streams = new Set<OpenStream>();
  readonly #perPrincipal = new Map<string, number>();
  /** Open streams by the command id whose aliases they follow. */
  readonly #byCommand = new Map<string, Set<OpenStream>>();
  #unsubscribe: (() => void) | undefined;
  #closed = false;

  /** A hub with no streams; it subscribes to the source when the first stream opens. */
  constructor(options: SseHubOptions) {
    this.#options = options;
  }

  /** Open streams. */
  get size(): number {
    return this.#streams.size;
  }

  /**
   * Opens a stream on `request.res`: checks the limits (throws 429 `TOO_MANY_STREAMS`, or 503
   * `NOT_READY` while shutting down, before writing anything), registers it with the live
   * fan-out, flushes the headers, then replays in the background when a `lastEventId` is given.
   */
  open(request: StreamRequest): void {
    this.#admit(request.principal);
    this.#subscribeToSource();
    const { connection, subscriber } = this.#register(request);
    connection.open();
    if (request.lastEventId === undefined) return;
    subscriber.replay(request.lastEventId).catch((err: unknown) => {
      this.#options.logger.warn({ err }, 'sse replay failed');
      connection.close('error');
    });
  }

  /**
   * `alias` now also correlates command `id` (the dispatcher learnt the backend's own id): every open
   * stream following `id` matches it from now on, so `closeOnTerminal` ends on the backend's terminal event.
   */
  addAlias(id: string, alias: string): void {
    for (const stream of this.#byCommand.get(id) ?? []) {
      const ids = stream.filter.correlationIds;
      if (ids && !ids.includes(alias) && ids.length < MAX_CORRELATION_IDS) ids.push(alias);
    }
  }

  /** Ends every stream now (shutdown begins; the HTTP drain need not wait for them). */
  drain(): void {
    this.close();
  }

  /** Ends every stream and leaves the source. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    for (const stream of [...this.#streams]) stream.connection.close('shutdown');
  }

  #admit(principal: string | undefined): void {
    const { maxConnections, maxConnectionsPerPrincipal } = this.#options.config;
    if (this.#closed) throw new ProtoError('NOT_READY', 'the gateway is shutting down');
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

  /** Creates the stream's connection and subscriber and adds it to the registry (synchronously: subscribe first). */
  #register(request: StreamRequest): OpenStream {
    const { config, metrics, source } = this.#options;
    const connection = new SseConnection(request.res, {
      keepaliveMs: config.keepaliveMs,
      maxBufferedBytes: config.maxBufferedBytes,
      onClose: (reason) => this.#release(stream, reason),
    });
    const subscriber = new SseSubscriber(
      { connection, source, filter: request.filter, closeOnTerminal: config.closeOnTerminal, maxHeldBytes: config.maxBufferedBytes, metrics },
      request.lastEventId !== undefined,
    );
    const stream: OpenStream = { principal: request.principal, filter: request.filter, aliasesFor: request.aliasesFor, connection, subscriber };
    this.#streams.add(stream);
    if (request.aliasesFor !== undefined) {
      const following = this.#byCommand.get(request.aliasesFor) ?? new Set<OpenStream>();
      this.#byCommand.set(request.aliasesFor, following.add(stream));
    }
    if (request.principal !== undefined) this.#perPrincipal.set(request.principal, (this.#perPrincipal.get(request.principal) ?? 0) + 1);
    metrics.opened();
    return stream;
  }

  #releasePrincipal(principal: string): void {
    const held = (this.#perPrincipal.get(principal) ?? 1) - 1;
    if (held > 0) this.#perPrincipal.set(principal, held);
    else this.#perPrincipal.delete(principal);
  }

  #release(stream: OpenStream, reason: CloseReason): void {
    if (!this.#streams.delete(stream)) return;
    if (stream.aliasesFor !== undefined) {
      const following = this.#byCommand.get(stream.aliasesFor);
      following?.delete(stream);
      if (following?.size === 0) this.#byCommand.delete(stream.aliasesFor);
    }
    if (stream.principal !== undefined) this.#releasePrincipal(stream.principal);
    this.#options.metrics.closed();
    if (reason === 'slow') this.#options.metrics.slowConsumer();
  }

  #subscribeToSource(): void {
    this.#unsubscribe ??= this.#options.source.subscribe((events) => this.#fanOut(events));
  }

  /** Hands each appended event to every stream, in log order. */
  #fanOut(events: StoredEvent[]): void {
    if (this.#streams.size === 0) return;
    for (const stored of events) {
      const outgoing: OutgoingEvent = { position: stored.position, keys: eventKeys(stored), frame: eventFrame(stored.event) };
      // A stream that closes during the loop removes itself; Set iteration tolerates that.
      for (const stream of this.#streams) stream.subscriber.offer(outgoing);
    }
  }
}
