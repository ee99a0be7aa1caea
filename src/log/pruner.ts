/**
 * Retention (`events.retention`): prunes the log at start and then every `intervalMs`, when the
 * store supports it. One pass at a time; failures are logged and retried at the next tick.
 */
import type { Logger } from 'pino';
import type { EventsConfig } from '../config/types.ts';
import { canPrune, type EventLog } from './EventLog.ts';

/** Default time between retention passes: one minute. */
export const PRUNE_INTERVAL_MS = 60_000;

export class Pruner {
  readonly #log: EventLog;
  readonly #limits: EventsConfig['retention'];
  readonly #logger: Logger;
  readonly #intervalMs: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(log: EventLog, limits: EventsConfig['retention'], logger: Logger, intervalMs = PRUNE_INTERVAL_MS) {
    this.#log = log;
    this.#limits = limits;
    this.#logger = logger;
    this.#intervalMs = intervalMs;
  }

  /** Runs a first pass now and schedules the next ones. */
  start(): void {
    if (!canPrune(this.#log) || this.#timer) return;
    void this.#pass();
    this.#timer = setInterval(() => void this.#pass(), this.#intervalMs);
  }

  /** Stops and waits for a pass under way. Safe to call twice. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  #pass(): Promise<void> {
    const log = this.#log;
    if (this.#running || !canPrune(log)) return Promise.resolve();
    this.#running = log
      .prune(this.#limits)
      .then((removed) => {
        if (removed > 0) this.#logger.info({ removed }, 'retention pruned events');
      })
      .catch((err: unknown) => this.#logger.warn({ err }, 'retention pass failed'))
      .finally(() => {
        this.#running = undefined;
      });
    return this.#running;
  }
}
