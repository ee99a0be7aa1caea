/**
 * The live tail: one transport-neutral piece behind every push transport (SSE and gRPC now; A2A
 * and MCP next). It holds the one live subscription to the event source, turns each appended event
 * into a `TailEvent` (filter keys and each transport's frame computed once), and offers it to every
 * attached subscriber in log order. A subscriber (`TailSubscriber`) brings its filter, the resume
 * point to replay after (subscribe first, then replay, de-duplicated by position: no gap and no
 * duplicate), its byte bound and close-on-terminal; the transport only frames and writes.
 *
 * Correlation aliases: a subscription that follows a command id (`aliasesFor`) has a
 * `correlationIds` filter; `addAlias` widens it when the dispatcher learns the backend's own id,
 * so the backend's events (and its terminal event) reach it, including those appended before the
 * alias was known here (the subscriber searches the log for them).
 *
 * On one node the source is the event log's appends; on Redis, a blocking stream read feeding the
 * same `subscribe`. `close()` ends every subscription with reason `shutdown`.
 */
import type { Logger } from 'pino';
import type { EventLog, StoredEvent } from '../../log/EventLog.ts';
import { TailEvent } from './tail-event.ts';
import { TailSubscriber, type TailSubscriberOptions } from './tail-subscriber.ts';

/** Where the tail gets its events: live appends, keyset pages and id lookup. */
export type TailSource = Pick<EventLog, 'subscribe' | 'query' | 'positionOf'>;

/** What a transport asks for: a subscriber's options without the source, and where to resume. */
export interface TailRequest<F> extends Omit<TailSubscriberOptions<F>, 'source'> {
  /** Replay the events after this event id, then continue live; undefined = live from now. */
  afterId?: string;
  /** Replay the events after this log position instead (when `afterId` is unset), then continue live. */
  afterPosition?: number;
  /** The command id whose correlation aliases the subscription follows (its filter has `correlationIds`). */
  aliasesFor?: string;
}

/** An attached subscription; `detach()` (idempotent) stops offering it events. */
export interface TailAttachment {
  detach(): void;
}

interface Attached {
  subscriber: TailSubscriber<unknown>;
  close(): void;
  /** Ends the stream after a failed read of the log (reason `error`). */
  fail(): void;
  aliasesFor?: string;
}

/** The fan-out of appended events to every push subscriber. A component: `close()` ends them all. */
export class LiveTail {
  readonly #source: TailSource;
  readonly #logger: Logger;
  readonly #attached = new Set<Attached>();
  /** Subscriptions by the command id whose aliases they follow. */
  readonly #byCommand = new Map<string, Set<Attached>>();
  #unsubscribe: (() => void) | undefined;
  #closed = false;

  constructor(options: { source: TailSource; logger: Logger }) {
    this.#source = options.source;
    this.#logger = options.logger;
  }

  /** True once closed (shutdown): transports refuse new subscriptions. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Open subscriptions, all transports together. */
  get size(): number {
    return this.#attached.size;
  }

  /**
   * Attaches a subscriber: registered with the live fan-out synchronously (before any replay reads
   * the log), then replaying after `afterId` in the background. The transport calls `detach()`
   * when its stream ends.
   */
  attach<F>(request: TailRequest<F>): TailAttachment {
    const { afterId, afterPosition, aliasesFor, ...options } = request;
    const subscriber = new TailSubscriber<F>({ ...options, source: this.#source }, afterId !== undefined || afterPosition !== undefined);
    const attached: Attached = { subscriber: subscriber as TailSubscriber<unknown>, close: () => options.connection.close('shutdown'), fail: () => options.connection.close('error'), aliasesFor };
    this.#subscribeToSource();
    this.#attached.add(attached);
    if (aliasesFor !== undefined) this.#byCommand.set(aliasesFor, (this.#byCommand.get(aliasesFor) ?? new Set()).add(attached));
    if (afterId !== undefined || afterPosition !== undefined) {
      (afterId !== undefined ? subscriber.replay(afterId) : subscriber.replayAfter(afterPosition as number)).catch((err: unknown) => {
        this.#logger.warn({ err }, 'live tail replay failed');
        options.connection.close('error');
      });
    }
    return { detach: () => this.#detach(attached) };
  }

  /**
   * `alias` now also correlates command `id` (the dispatcher learnt the backend's own id): every
   * subscription following `id` matches it from now on.
   */
  addAlias(id: string, alias: string): void {
    for (const attached of this.#byCommand.get(id) ?? []) {
      // Its events may have gone by already (appended before the alias was known here): the subscriber searches the log.
      attached.subscriber.followAlias(alias).catch((err: unknown) => {
        this.#logger.warn({ err }, 'live tail could not search the log for a correlation alias');
        attached.fail();
      });
    }
  }

  /** Ends every subscription (reason `shutdown`) and leaves the source. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    for (const attached of [...this.#attached]) attached.close();
  }

  #detach(attached: Attached): void {
    if (!this.#attached.delete(attached) || attached.aliasesFor === undefined) return;
    const following = this.#byCommand.get(attached.aliasesFor);
    following?.delete(attached);
    if (following?.size === 0) this.#byCommand.delete(attached.aliasesFor);
  }

  #subscribeToSource(): void {
    this.#unsubscribe ??= this.#source.subscribe((events) => this.#fanOut(events));
  }

  /** Hands each appended event to every subscriber, in log order. */
  #fanOut(events: StoredEvent[]): void {
    if (this.#attached.size === 0) return;
    for (const stored of events) {
      const event = new TailEvent(stored);
      // A subscription that closes during the loop detaches itself; Set iteration tolerates that.
      for (const attached of this.#attached) attached.subscriber.offer(event);
    }
  }
}
