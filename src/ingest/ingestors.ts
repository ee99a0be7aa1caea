/**
 * One ingestor per source of events: a `ProtoFollower` per proto backend, a `RecordPoller` per
 * legacy `records` entry. Built from the backends at boot, started and closed together, and kept in
 * step with the backend directory: a backend registered at runtime (or added by a reload) gets its
 * ingestors (started when the set is), a removed one's ingestors are closed and its ingest metrics
 * forgotten, a replaced one's (a reload changed it) are closed and new ones started from the same
 * stored checkpoints, a paused backend's ingestors pause and resume with it.
 *
 * With `leases` (several replicas on one store) a backend's ingestors run only while this replica
 * holds the backend's ingestion lease (`LeaseGate`): one replica follows each backend, and when it
 * dies another takes over from the stored checkpoint.
 */
import type { Logger } from 'pino';
import type { Backend, BackendDirectory } from '../backends/directory.ts';
import type { LegacyBackend } from '../backends/legacy-backend.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import type { CloudEvent, EventLog } from '../log/EventLog.ts';
import type { IngestMetrics } from '../metrics/ingest.ts';
import { LeaseGate, type IngestionLeases } from './ingestion-lease.ts';
import { ProtoFollower } from './proto-follower.ts';
import { RecordPoller } from './record-poller.ts';

/** What every ingestor can do. */
export interface Ingestor {
  /** The latest failure, without the backend's address (`failureMessage`); undefined once a run succeeds again. */
  readonly lastError: string | undefined;
  start(): void;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

/** What the ingestors need: the backends, the log, the public URL (record dataschemas), a logger, the metrics. */
export interface IngestorsOptions {
  backends: BackendDirectory;
  log: EventLog;
  publicUrl: string;
  logger: Logger;
  metrics: IngestMetrics;
  /** `events.maxEventBytes`: one ingested event's JSON at most (default 2 MiB). */
  maxEventBytes?: number;
  /** Ingestion leases shared by the replicas; undefined = this replica follows every backend. */
  leases?: IngestionLeases;
}

/** The ingestors of every backend; a component (`start`, `close`). */
export class IngestorSet {
  /** The ingestors of each backend, by backend id (live: runtime backends come and go). */
  readonly byBackend = new Map<string, Ingestor[]>();
  readonly #options: IngestorsOptions;
  readonly #gates = new Map<string, LeaseGate>();
  readonly #unwatch: () => void;
  #started = false;
  #closing: Promise<void> | undefined;

  constructor(options: IngestorsOptions) {
    this.#options = options;
    for (const backend of options.backends.list()) this.#create(backend);
    this.#unwatch = options.backends.watch({
      added: (backend) => this.#added(backend),
      removed: (backend) => this.#removed(backend.id),
      replaced: async (previous, next) => {
        await this.#removed(previous.id);
        this.#added(next);
      },
      paused: (backend) => this.#each(backend.id, (ingestor) => ingestor.pause()),
      resumed: (backend) => this.#each(backend.id, (ingestor) => (this.#mayRun(backend.id) ? ingestor.resume() : undefined)),
    });
  }

  /** Starts every ingestor (a paused backend's stay paused until resumed). */
  start(): void {
    this.#started = true;
    for (const [id, ingestors] of this.byBackend) for (const ingestor of ingestors) this.#launch(id, ingestor);
  }

  /** The latest failure of the ingestors of `backendId` (the first that has one), for `/status`. */
  lastError(backendId: string): string | undefined {
    return this.byBackend.get(backendId)?.find((ingestor) => ingestor.lastError !== undefined)?.lastError;
  }

  /** Closes every ingestor. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#closeAll();
    return this.#closing;
  }

  async #closeAll(): Promise<void> {
    this.#unwatch();
    // Ingestion stops before the leases go, so no replica appends after another took over.
    await Promise.all([...this.byBackend.values()].flat().map((ingestor) => ingestor.close()));
    await Promise.all([...this.#gates.values()].map((gate) => gate.close()));
  }

  #added(backend: Backend): void {
    if (this.#closing) return;
    const ingestors = this.#create(backend);
    if (this.#started) for (const ingestor of ingestors) this.#launch(backend.id, ingestor);
  }

  async #removed(id: string): Promise<void> {
    const ingestors = this.byBackend.get(id) ?? [];
    this.byBackend.delete(id);
    const gate = this.#gates.get(id);
    this.#gates.delete(id);
    await Promise.all(ingestors.map((ingestor) => ingestor.close()));
    await gate?.close();
    this.#options.metrics.forget(id);
  }

  #launch(id: string, ingestor: Ingestor): void {
    if (!this.#mayRun(id)) ingestor.pause();
    ingestor.start();
    this.#gates.get(id)?.start();
  }

  /** A backend's ingestors run when it is not paused and (with leases) this replica holds its lease. */
  #mayRun(id: string): boolean {
    return !this.#options.backends.isPaused(id) && (this.#gates.get(id)?.holding ?? true);
  }

  #each(id: string, act: (ingestor: Ingestor) => void): void {
    for (const ingestor of this.byBackend.get(id) ?? []) act(ingestor);
  }

  #create(backend: Backend): Ingestor[] {
    const ingestors = backend.kind === 'proto' ? [this.#follower(backend)] : this.#pollers(backend);
    this.byBackend.set(backend.id, ingestors);
    const { leases, metrics } = this.#options;
    if (leases) {
      const id = backend.id;
      metrics.leaseHeld.set({ backend: id }, 0);
      this.#gates.set(id, new LeaseGate({
        leases,
        backendId: id,
        onChange: (holding) => {
          metrics.leaseHeld.set({ backend: id }, holding ? 1 : 0);
          this.#each(id, (ingestor) => (this.#mayRun(id) ? ingestor.resume() : ingestor.pause()));
        },
      }));
    }
    return ingestors;
  }

  #follower(backend: ProtoBackend): Ingestor {
    const o = this.#options;
    return new ProtoFollower({
      backendId: backend.id,
      endpoint: () => backend.endpoint(),
      log: o.log,
      mode: backend.config.events.follow,
      intervalMs: backend.config.events.intervalMs,
      headers: backend.config.headers,
      dispatcher: backend.connections?.dispatcher,
      rewrite: (event) => publicEvent(backend, event),
      logger: o.logger,
      metrics: o.metrics,
      maxEventBytes: o.maxEventBytes,
    });
  }

  #pollers(backend: LegacyBackend): Ingestor[] {
    const o = this.#options;
    return backend.config.records.map(
      (records) => new RecordPoller({ backend: backend.config, records, publicUrl: o.publicUrl, log: o.log, logger: o.logger, metrics: o.metrics, maxEventBytes: o.maxEventBytes }),
    );
  }
}

/**
 * A proto backend's event as stored: as received, except that backend addresses in `source` and
 * `dataschema` become their public form (DESIGN.md, Conventions).
 */
export function publicEvent(backend: ProtoBackend, event: CloudEvent): CloudEvent {
  const out: CloudEvent = { ...event, source: backend.rewrite(event.source) };
  if (typeof event.dataschema === 'string') out.dataschema = backend.rewrite(event.dataschema);
  return out;
}
