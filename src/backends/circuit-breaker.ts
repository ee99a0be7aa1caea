/**
 * A circuit breaker per backend (`backends[].circuit`), shared by everything that calls the
 * backend: command dispatch, queries and the pass-through. `failures` consecutive failures open it;
 * while open, calls are refused at once (503 `BACKEND_UNAVAILABLE`) without touching the backend;
 * `cooldown` later one probe is let through (half-open): its success closes the circuit, its
 * failure opens it for another cooldown.
 */
import { ProtoError } from '../errors.ts';

export type CircuitState = 'closed' | 'open' | 'half-open';

export interface CircuitOptions {
  /** Consecutive failures that open the circuit (>= 1). */
  failures: number;
  /** How long it stays open before a probe, in milliseconds. */
  cooldownMs: number;
  /** Clock in epoch milliseconds; injectable for tests. */
  now?: () => number;
  /** Called on every change of state. */
  onChange?: (state: CircuitState) => void;
}

export class CircuitBreaker {
  readonly #options: Required<Omit<CircuitOptions, 'onChange'>> & Pick<CircuitOptions, 'onChange'>;
  #state: CircuitState = 'closed';
  #consecutiveFailures = 0;
  #openedAt = 0;
  #probing = false;

  constructor(options: CircuitOptions) {
    this.#options = { now: Date.now, ...options, failures: Math.max(1, options.failures) };
  }

  /** The current state (an open circuit past its cooldown reads as half-open). */
  get state(): CircuitState {
    if (this.#state === 'open' && this.#options.now() - this.#openedAt >= this.#options.cooldownMs) return 'half-open';
    return this.#state;
  }

  /**
   * Asks to call the backend. Throws 503 `BACKEND_UNAVAILABLE` while the circuit is open, or while
   * half-open with a probe already under way. Every successful `admit()` must be followed by
   * exactly one `succeeded()`, `failed()` or `released()`.
   */
  admit(): void {
    const state = this.state;
    if (state === 'closed') return;
    if (state === 'half-open' && !this.#probing) {
      this.#probing = true;
      this.#set('half-open');
      return;
    }
    const retryAfter = Math.max(1, Math.ceil((this.#openedAt + this.#options.cooldownMs - this.#options.now()) / 1000));
    throw new ProtoError('BACKEND_UNAVAILABLE', 'the backend is unavailable (circuit open)', { circuit: 'open' }, { 'Retry-After': String(retryAfter) });
  }

  /** The call worked: the circuit closes and the failure count restarts. */
  succeeded(): void {
    this.#probing = false;
    this.#consecutiveFailures = 0;
    this.#set('closed');
  }

  /** The call failed in a way that says the backend is unwell (unreachable, timeout, 5xx). */
  failed(): void {
    const wasProbe = this.#probing;
    this.#probing = false;
    this.#consecutiveFailures++;
    if (wasProbe || this.#consecutiveFailures >= this.#options.failures) {
      this.#openedAt = this.#options.now();
      this.#set('open');
    }
  }

  /** The call ended without telling anything about the backend (e.g. the client went away). */
  released(): void {
    this.#probing = false;
  }

  #set(state: CircuitState): void {
    if (state === this.#state) return;
    this.#state = state;
    this.#options.onChange?.(state);
  }
}
