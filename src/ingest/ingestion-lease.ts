/**
 * Ingestion leases: with several replicas on one store, one replica at a time follows each backend.
 * A replica holds a backend's lease while it keeps renewing it; when it dies the lease expires and
 * another replica takes the backend over, continuing from the checkpoint stored with the events.
 *
 * `LeaseGate` is the renewal loop of one backend: it tries to hold the lease every third of its
 * time to live and tells its owner when holding starts or stops (ingestion then resumes or pauses).
 */

/** The leases of one store (the port). */
export interface IngestionLeases {
  /** How long a lease lasts without renewal, in ms. */
  readonly ttlMs: number;
  /** Takes the lease of `key` when free, renews it when this owner holds it; true when held now. */
  hold(key: string): Promise<boolean>;
  /** Gives the lease up if this owner holds it. */
  release(key: string): Promise<void>;
}

/** What a gate needs: the leases, the backend, and whom to tell when holding changes. */
export interface LeaseGateOptions {
  leases: IngestionLeases;
  backendId: string;
  /** Called with true when the lease is taken, false when it is lost (or cannot be renewed). */
  onChange(holding: boolean): void;
}

/** Keeps (or keeps trying to take) one backend's lease; `start()` and `close()` are idempotent. */
export class LeaseGate {
  readonly #options: LeaseGateOptions;
  #holding = false;
  #timer: NodeJS.Timeout | undefined;
  #started = false;
  #closed = false;
  #tick: Promise<void> | undefined;

  constructor(options: LeaseGateOptions) {
    this.#options = options;
  }

  /** True while this replica holds the lease. */
  get holding(): boolean {
    return this.#holding;
  }

  /** Tries to take the lease now, then renews it every third of its time to live. */
  start(): void {
    if (this.#started || this.#closed) return;
    this.#started = true;
    this.#schedule(0);
  }

  /** Stops renewing and releases the lease, so another replica takes over at once. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    await this.#tick;
    if (this.#holding) {
      this.#set(false);
      await this.#options.leases.release(leaseKey(this.#options.backendId)).catch(() => {});
    }
  }

  #schedule(delayMs: number): void {
    if (this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#tick = this.#renew().finally(() => this.#schedule(Math.max(1, Math.floor(this.#options.leases.ttlMs / 3))));
    }, delayMs);
  }

  async #renew(): Promise<void> {
    let held: boolean;
    try {
      held = await this.#options.leases.hold(leaseKey(this.#options.backendId));
    } catch {
      held = false; // the store is away: the lease cannot be renewed, nor can events be appended
    }
    if (!this.#closed) this.#set(held);
  }

  #set(holding: boolean): void {
    if (holding === this.#holding) return;
    this.#holding = holding;
    this.#options.onChange(holding);
  }
}

/** The lease key of a backend. */
export function leaseKey(backendId: string): string {
  return `ingest:${backendId}`;
}
