/**
 * Live fan-out inside one process (`EventLog.subscribe`), shared by every store. A listener that
 * throws is reported and skipped: it never breaks the append that triggered it nor the listeners
 * after it.
 */
import type { LogListener, StoredEvent } from './EventLog.ts';

/** Receives an error thrown by a listener. Default: `process.emitWarning` (never crashes the process). */
export type ListenerErrorHandler = (err: unknown) => void;

function warn(err: unknown): void {
  process.emitWarning(err instanceof Error ? err : new Error(String(err)), { code: 'PROTO_LOG_LISTENER' });
}

/** The listeners of one store, called in subscription order. */
export class ListenerSet {
  // One entry per subscribe() call, so the same function subscribed twice is two subscriptions.
  readonly #entries = new Set<{ listener: LogListener }>();
  readonly #onError: ListenerErrorHandler;

  /** @param onError receives errors thrown by listeners; default `process.emitWarning`. */
  constructor(onError: ListenerErrorHandler = warn) {
    this.#onError = onError;
  }

  /** Adds a listener; returns its unsubscribe, which is safe to call twice. */
  subscribe(listener: LogListener): () => void {
    const entry = { listener };
    this.#entries.add(entry);
    return () => {
      this.#entries.delete(entry);
    };
  }

  /** Calls every listener with `events`; does nothing for an empty list. */
  notify(events: StoredEvent[]): void {
    if (events.length === 0) return;
    // A snapshot: a listener that unsubscribes (or subscribes) during the call changes the next round only.
    for (const entry of [...this.#entries]) {
      try {
        entry.listener(events);
      } catch (err) {
        this.#onError(err);
      }
    }
  }

  /** Removes every listener (on close). */
  clear(): void {
    this.#entries.clear();
  }
}
