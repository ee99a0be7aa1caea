/**
 * The Redis event log's live fan-out across replicas: a dedicated connection blocks on `XREAD` of
 * the log's tail stream (`P log:tail`, one entry per append) and hands every append of any replica
 * to this process's listeners in log order; this process's own appends are handed over before its
 * `append` resolves. Deliveries are serialised behind one watermark (the last delivered position):
 * anything between it and a newer entry (a reconnect, a trimmed tail) is read from the log first,
 * so there is no gap and no repeat.
 */
import type { Redis } from 'ioredis';
import type { EventPage, LogListener, StoredEvent } from './EventLog.ts';
import { ListenerSet, type ListenerErrorHandler } from './listeners.ts';

/** How long one `XREAD` blocks, ms. */
const BLOCK_MS = 5_000;
/** Pause before the tail reader retries after an error, ms. */
const READER_RETRY_MS = 250;
/** Events read from the log at once when a gap is filled. */
const FILL_CHUNK = 1_000;

/** What the tail needs of its log. */
export interface RedisTailOptions {
  /** The tail stream's key. */
  key: string;
  /** A page of the whole log after `after` (to fill a gap). */
  query(after: number, limit: number): Promise<EventPage>;
  /** One tail entry's fields (position, stored JSON, …) as events. */
  parse(position: number, text: string): StoredEvent;
  onListenerError?: ListenerErrorHandler;
}

/** The tail reader and the listeners it delivers to. */
export class RedisTail {
  readonly #options: RedisTailOptions;
  readonly #listeners: ListenerSet;
  #blocking: Redis | undefined;
  #reader: Promise<void> | undefined;
  /** The last position handed to local listeners. */
  #delivered = 0;
  /** Serialises deliveries, so listeners see the log in order. */
  #deliveries: Promise<void> = Promise.resolve();

  constructor(options: RedisTailOptions) {
    this.#options = options;
    this.#listeners = new ListenerSet(options.onListenerError);
  }

  /** Starts reading on `blocking` (a connection of its own), from the tail's newest entry (read with `client`). */
  async start(client: Redis, blocking: Redis): Promise<void> {
    const last = await client.xrevrange(this.#options.key, '+', '-', 'COUNT', 1);
    this.#delivered = last.length > 0 ? Number(last[0][0].split('-')[0]) : 0;
    this.#blocking = blocking;
    this.#deliveries = Promise.resolve();
    this.#reader = this.#read(blocking);
  }

  subscribe(listener: LogListener): () => void {
    return this.#listeners.subscribe(listener);
  }

  /** Hands `appended` (this process's append) to listeners after everything before it. */
  deliver(appended: StoredEvent[]): Promise<void> {
    return this.#enqueue(appended).catch(() => {});
  }

  /** Stops the reader (its connection is cut, not quit: a blocked `XREAD` would hold a QUIT back) and drops the listeners. */
  async stop(): Promise<void> {
    const blocking = this.#blocking;
    const reader = this.#reader;
    this.#blocking = undefined;
    this.#reader = undefined;
    this.#listeners.clear();
    blocking?.disconnect();
    await reader;
    await this.#deliveries.catch(() => {});
  }

  /** Queues the delivery of `events` behind the ones before; its own failure is the caller's. */
  #enqueue(events: StoredEvent[]): Promise<void> {
    const run = this.#deliveries.then(() => this.#deliverInOrder(events));
    this.#deliveries = run.catch(() => {});
    return run;
  }

  /** Delivers `events` (one append, ascending), first filling any gap from the log. */
  async #deliverInOrder(events: StoredEvent[]): Promise<void> {
    const first = events[0].position;
    if (first > this.#delivered + 1) await this.#fill(first - 1);
    const fresh = events.filter((stored) => stored.position > this.#delivered);
    if (fresh.length === 0) return;
    this.#delivered = fresh[fresh.length - 1].position;
    this.#listeners.notify(fresh);
  }

  /** Delivers the log's events after the watermark up to `until` (a reconnect or a trimmed tail). */
  async #fill(until: number): Promise<void> {
    while (this.#delivered < until && this.#blocking) {
      const page = await this.#options.query(this.#delivered, Math.min(until - this.#delivered, FILL_CHUNK));
      const events = page.events.filter((stored) => stored.position <= until);
      if (events.length === 0) {
        this.#delivered = until; // pruned meanwhile: nothing left to hand over
        return;
      }
      this.#delivered = events[events.length - 1].position;
      this.#listeners.notify(events);
    }
  }

  /** The reader: blocks on the stream after the watermark; resumes after errors until stopped. */
  async #read(blocking: Redis): Promise<void> {
    while (this.#blocking === blocking) {
      try {
        const reply = (await blocking.xread('COUNT', 100, 'BLOCK', BLOCK_MS, 'STREAMS', this.#options.key, `${this.#delivered}-0`)) as
          | Array<[string, Array<[string, string[]]>]>
          | null;
        if (!reply) continue;
        for (const [, entries] of reply) {
          for (const [, fields] of entries) {
            const events: StoredEvent[] = [];
            for (let i = 0; i < fields.length; i += 2) events.push(this.#options.parse(Number(fields[i]), fields[i + 1]));
            await this.#enqueue(events);
          }
        }
      } catch {
        if (this.#blocking !== blocking) return;
        await new Promise((resolve) => setTimeout(resolve, READER_RETRY_MS));
      }
    }
  }
}
