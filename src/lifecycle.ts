/**
 * The lifecycle of the gateway's components: started in the order they were added, drained and
 * closed in reverse order within one shutdown deadline. A component is added as soon as it exists,
 * so a start-up that fails half-way closes exactly what it had opened.
 */
import type { Logger } from 'pino';

/** A part with a lifecycle: `start()` once at boot, `close()` at shutdown (safe to call twice). */
export interface Component {
  start?(): Promise<void> | void;
  /** Optional: called when shutdown begins, before the HTTP drain (long-lived streams end here). */
  drain?(): Promise<void> | void;
  /** `deadlineMs` (epoch ms): when shutdown must be over; a component that waits uses only what is left. */
  close(deadlineMs?: number): Promise<void> | void;
}

export class Lifecycle {
  readonly #components: Component[] = [];
  readonly #logger: Logger;

  constructor(logger: Logger) {
    this.#logger = logger;
  }

  /** Adds components (started after those added before, closed before them); returns the first. */
  add<T extends Component>(component: T, ...more: Component[]): T {
    this.#components.push(component, ...more);
    return component;
  }

  /** Starts every component, in order. */
  async start(): Promise<void> {
    for (const component of this.#components) await component.start?.();
  }

  /** Ends long-lived work (streams) before the HTTP drain. */
  async drain(): Promise<void> {
    for (const component of this.#components) await this.#guard('drain', () => component.drain?.());
  }

  /** Closes every component in reverse order; a failing close is logged and the others still close. */
  async close(deadlineMs: number): Promise<void> {
    for (const component of [...this.#components].reverse()) await this.#guard('close', () => component.close(deadlineMs));
  }

  async #guard(step: string, run: () => Promise<void> | void): Promise<void> {
    try {
      await run();
    } catch (err) {
      this.#logger.error({ err, step }, 'component failed to stop cleanly');
    }
  }
}
