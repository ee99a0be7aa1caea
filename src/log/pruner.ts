/**
 * Retention (`events.retention`): prunes the log at start and then every `intervalMs`, when the
 * store supports it. One pass at a time; failures are logged and retried at the next tick.
 *
 * Retention never outruns a consumer: events after the position of the slowest durable reader (the
 * webhook fan-out, which must read every event) are kept whatever the limits say. What that holds
 * back is reported in `proto_gateway_log_retention_held_back`, and logged once (a warning) when it
 * has been held back for longer than `maxAge`: the reader is stuck, and the log grows meanwhile.
 */
import type { Logger } from 'pino';
import type { EventsConfig } from '../config/types.ts';
import { canPrune, type EventLog } from './EventLog.ts';

/** Default time between retention passes: one minute. */
export const PRUNE_INTERVAL_MS = 60_000;

/** A reader that must read every event (the webhook fan-out): retention never deletes past its position. */
export interface DurableReader {
  /** Its name in logs. */
  readonly name: string;
  /** Position of the last event it has durably read; undefined = it holds nothing back. */
  readPosition(): Promise<number | undefined>;
}

/** Options of a `Pruner`. */
export interface PrunerOptions {
  /** The durable readers; default none. */
  readers?: DurableReader[];
  /** Told the held-back count after each pass (the metric). */
  onHeldBack?: (count: number) => void;
  /** Default `PRUNE_INTERVAL_MS`. */
  intervalMs?: number;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

export class Pruner {
  readonly #log: EventLog;
  #limits: EventsConfig['retention'];
  readonly #logger: Logger;
  readonly #options: PrunerOptions;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  /** When the current hold began (epoch ms), undefined while nothing is held back. */
  #heldSinceMs: number | undefined;
  #warned = false;

  constructor(log: EventLog, limits: EventsConfig['retention'], logger: Logger, options: PrunerOptions = {}) {
    this.#log = log;
    this.#limits = limits;
    this.#logger = logger;
    this.#options = options;
  }

  /** Takes new limits (a configuration reload) and, once started, prunes by them at once. */
  reconfigure(limits: EventsConfig['retention']): void {
    this.#limits = limits;
    if (this.#timer) void this.pass();
  }

  /** Runs a first pass now and schedules the next ones. */
  start(): void {
    if (!canPrune(this.#log) || this.#timer) return;
    void this.pass();
    this.#timer = setInterval(() => void this.pass(), this.#options.intervalMs ?? PRUNE_INTERVAL_MS);
    this.#timer.unref();
  }

  /** Stops and waits for a pass under way. Safe to call twice. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** One retention pass (the timer runs them; a pass under way is joined, not doubled). */
  pass(): Promise<void> {
    const log = this.#log;
    if (this.#running || !canPrune(log)) return this.#running ?? Promise.resolve();
    this.#running = this.#keepAfter()
      .then((keepAfter) => log.prune({ ...this.#limits, ...(keepAfter !== undefined && { keepAfter }) }, this.#now()))
      .then(({ removed, heldBack }) => {
        if (removed > 0) this.#logger.info({ removed }, 'retention pruned events');
        this.#observeHold(heldBack);
      })
      .catch((err: unknown) => this.#logger.warn({ err }, 'retention pass failed'))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }

  /** The lowest position a durable reader has reached, or undefined when none holds anything back. */
  async #keepAfter(): Promise<number | undefined> {
    const positions = await Promise.all((this.#options.readers ?? []).map((reader) => reader.readPosition()));
    const held = positions.filter((p): p is number => p !== undefined);
    return held.length === 0 ? undefined : Math.min(...held);
  }

  #observeHold(heldBack: number): void {
    this.#options.onHeldBack?.(heldBack);
    const now = this.#now();
    if (heldBack === 0) {
      this.#heldSinceMs = undefined;
      this.#warned = false;
      return;
    }
    this.#heldSinceMs ??= now;
    if (!this.#warned && now - this.#heldSinceMs > this.#limits.maxAgeMs) {
      this.#warned = true;
      const readers = (this.#options.readers ?? []).map((reader) => reader.name);
      this.#logger.warn({ heldBack, readers, sinceMs: this.#heldSinceMs }, 'retention held back longer than events.retention.maxAge: a durable reader is behind; the log grows until it catches up');
    }
  }
}
