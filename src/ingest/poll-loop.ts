/**
 * The lifecycle every ingestor shares: run a task now, then again after an interval; after a
 * failure, again after a backoff delay; pause, resume and close at any time. At most one run is in
 * flight; `close()` aborts it and waits for it to settle.
 */
import { backoffDelay, DEFAULT_MAX_BACKOFF_MS } from './backoff.ts';

/** What a `PollLoop` runs and how often. */
export interface PollLoopOptions {
  /** Delay after a successful run, in milliseconds; also the first backoff delay. */
  intervalMs: number;
  /** Ceiling of a backoff delay, in milliseconds (default 30 000). */
  maxBackoffMs?: number;
  /** One run. `signal` aborts on `pause()` and `close()`; a rejection means "back off". */
  run(signal: AbortSignal): Promise<void>;
  /** Told of each failed run (not of runs aborted by pause or close) with the delay before the next. */
  onError(err: unknown, retryInMs: number): void;
  /** Source of jitter in [0, 1) (default `Math.random`). */
  random?: () => number;
}

/** Runs `options.run` repeatedly; see the module comment. Timers keep the process alive until `close()`. */
export class PollLoop {
  readonly #options: PollLoopOptions;
  #started = false;
  #paused = false;
  #closed: Promise<void> | undefined;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;
  #abort: AbortController | undefined;
  #failures = 0;

  constructor(options: PollLoopOptions) {
    this.#options = options;
  }

  /** Starts the first run now. Idempotent; does nothing after `close()`. */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    this.#schedule(0);
  }

  /** Stops running: the run in flight is aborted, no other starts until `resume()`. */
  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    clearTimeout(this.#timer);
    this.#abort?.abort(new Error('ingestion paused'));
  }

  /** Runs again (at once) after `pause()`. */
  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    // A run still settling after its abort schedules the next one itself.
    if (!this.#inFlight) this.#schedule(0);
  }

  /** True while paused. */
  get paused(): boolean {
    return this.#paused;
  }

  /** Aborts the run in flight, cancels the timer and waits for the run to settle. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= this.#shutdown();
    return this.#closed;
  }

  async #shutdown(): Promise<void> {
    clearTimeout(this.#timer);
    this.#abort?.abort(new Error('ingestion closed'));
    await this.#inFlight;
  }

  #schedule(delayMs: number): void {
    if (this.#closed || this.#paused || !this.#started) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#runOnce(), delayMs);
  }

  #runOnce(): void {
    const abort = new AbortController();
    this.#abort = abort;
    const run = async (): Promise<void> => this.#options.run(abort.signal);
    this.#inFlight = run().then(
      () => this.#settled(abort, undefined),
      (err: unknown) => this.#settled(abort, err ?? new Error('run failed')),
    );
  }

  #settled(abort: AbortController, err: unknown): void {
    this.#inFlight = undefined;
    this.#abort = undefined;
    if (abort.signal.aborted) return this.#schedule(0);
    if (err === undefined) {
      this.#failures = 0;
      return this.#schedule(this.#options.intervalMs);
    }
    this.#failures++;
    const { intervalMs, maxBackoffMs = DEFAULT_MAX_BACKOFF_MS, random } = this.#options;
    const delay = backoffDelay(this.#failures, intervalMs, maxBackoffMs, random);
    this.#options.onError(err, delay);
    this.#schedule(delay);
  }
}
