/**
 * The live tail: one EventSource on `events/stream` with the chosen filters, kept while the console
 * is open so events that arrive while another page is shown are there when the tail is looked at.
 * EventSource reconnects by itself and sends `Last-Event-ID` (the gateway sends ids), so a dropped
 * connection resumes where it stopped. Bounded: the newest `TAIL_LIMIT` events are kept; while
 * paused, arrivals are held back (as many again) and shown on resume.
 */
import type { Api } from './api.ts';
import type { CloudEvent } from './types.ts';

/** Events kept (and held back while paused) at most; older ones are dropped. */
export const TAIL_LIMIT = 500;

/** The filters of `GET /events/stream`. */
export interface TailFilter {
  type?: string;
  source?: string;
  correlationId?: string;
}

export type TailConnection = 'connecting' | 'open' | 'reconnecting' | 'closed';

/** What the tail page shows. */
export interface TailState {
  connection: TailConnection;
  filter: TailFilter;
  paused: boolean;
  /** Newest first. */
  events: CloudEvent[];
  /** Arrived while paused, newest first. */
  held: CloudEvent[];
}

/** The live tail of one signed-in session. */
export class TailFeed {
  #api: Api;
  #source: EventSource | undefined;
  #state: TailState = { connection: 'closed', filter: {}, paused: false, events: [], held: [] };
  #listeners = new Set<(state: TailState) => void>();

  constructor(api: Api) {
    this.#api = api;
  }

  get state(): TailState {
    return this.#state;
  }

  /** Calls `listener` on every change; returns the unsubscribe function. */
  subscribe(listener: (state: TailState) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Connects with `filter` (a new filter starts a new stream and clears what was shown). */
  connect(filter: TailFilter = this.#state.filter): void {
    this.#source?.close();
    const source = new EventSource(this.#api.streamUrl({ ...filter }));
    this.#source = source;
    this.#set({ connection: 'connecting', filter, events: [], held: [] });
    source.onopen = () => this.#set({ connection: 'open' });
    source.onerror = () => this.#set({ connection: source.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting' });
    source.onmessage = (message: MessageEvent<string>) => this.#receive(JSON.parse(message.data) as CloudEvent);
  }

  /** Whether a stream is open or being (re)opened. */
  get connected(): boolean {
    return this.#source !== undefined && this.#source.readyState !== EventSource.CLOSED;
  }

  setPaused(paused: boolean): void {
    if (paused) return this.#set({ paused });
    this.#set({ paused, events: [...this.#state.held, ...this.#state.events].slice(0, TAIL_LIMIT), held: [] });
  }

  clear(): void {
    this.#set({ events: [], held: [] });
  }

  close(): void {
    this.#source?.close();
    this.#source = undefined;
    this.#set({ connection: 'closed' });
  }

  #receive(event: CloudEvent): void {
    if (this.#state.paused) this.#set({ held: [event, ...this.#state.held].slice(0, TAIL_LIMIT) });
    else this.#set({ events: [event, ...this.#state.events].slice(0, TAIL_LIMIT) });
  }

  #set(change: Partial<TailState>): void {
    this.#state = { ...this.#state, ...change };
    for (const listener of this.#listeners) listener(this.#state);
  }
}
