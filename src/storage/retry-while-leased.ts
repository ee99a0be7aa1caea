/**
 * The end of an attempt (a completion, a reschedule, an outcome) must reach the store, or the work
 * is done twice when its claim's lease runs out. A store that refuses for a moment (Redis
 * restarting) delays that write instead: it is tried again every `STORE_RETRY_MS` while the lease
 * lasts and the caller is not stopping, then the last error is thrown (the work comes back after the
 * lease: at least once, never lost). Used by the command dispatcher and the webhook dispatcher.
 */
import { setTimeout as sleep } from 'node:timers/promises';

/** Delay between two tries of a refused write, ms. */
export const STORE_RETRY_MS = 250;

/** When to stop trying, and what to say about it. */
export interface LeasedWrite {
  /** The end of the claim's lease, epoch ms: no try starts that could outlive it. */
  leaseEndMs: number;
  /** Aborted when the caller stops (shutdown): no further try, and the wait between tries ends at once. */
  signal: AbortSignal;
  /** Called once, at the first refusal (one log line per write, not one per try). */
  onFirstRefusal(err: unknown): void;
  /** Clock, epoch ms; default `Date.now`. */
  now?: () => number;
}

/** Runs `write` until the store takes it, within the lease (see the module comment). */
export async function retryWhileLeased<T>(write: () => Promise<T>, options: LeasedWrite): Promise<T> {
  const now = options.now ?? Date.now;
  for (let tries = 1; ; tries++) {
    try {
      return await write();
    } catch (err) {
      if (options.signal.aborted || now() + STORE_RETRY_MS >= options.leaseEndMs) throw err;
      if (tries === 1) options.onFirstRefusal(err);
      await sleep(STORE_RETRY_MS, undefined, { signal: options.signal }).catch(() => {});
    }
  }
}
