/**
 * Metrics of ingestion (followers of proto backends, pollers of legacy records). Created once per
 * registry at boot and passed into every ingestor. Labels are bounded: `backend` is a configured
 * or registered backend id, `type` an event type of that backend's catalogue (DESIGN.md, Metric
 * names).
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { AppendResult } from '../log/EventLog.ts';

/** The ingestion metrics and the small helpers ingestors call. */
export interface IngestMetrics {
  /** `proto_gateway_events_ingested_total{backend,type}`: events newly added to the log. */
  readonly ingested: Counter<'backend' | 'type'>;
  /** `proto_gateway_events_duplicates_total{backend}`: events read again and dropped by id. */
  readonly duplicates: Counter<'backend'>;
  /** `proto_gateway_events_mapping_failures_total{backend}`: legacy records that could not be mapped. */
  readonly mappingFailures: Counter<'backend'>;
  /** `proto_gateway_events_malformed_total{backend}`: proto backend events with a broken envelope. */
  readonly malformed: Counter<'backend'>;
  /** `proto_gateway_events_too_large_total{backend}`: events over `events.maxEventBytes`, refused once at ingestion. */
  readonly tooLarge: Counter<'backend'>;
  /** `proto_gateway_ingest_errors_total{backend}`: failed polls, pages or streams (then backoff). */
  readonly errors: Counter<'backend'>;
  /**
   * `proto_gateway_ingest_lag_seconds{backend}`: seconds since the backend was last read
   * successfully (a poll answered, a page appended, an SSE chunk received). It measures whether
   * ingestion keeps up, not how old the newest event is: a quiet but healthy backend stays near
   * its poll interval. Computed at scrape time.
   */
  readonly lag: Gauge<'backend'>;
  /** `proto_gateway_ingest_lease_held{backend}`: 1 while this replica holds the backend's ingestion lease (storage.driver redis), else 0. */
  readonly leaseHeld: Gauge<'backend'>;
  /** Counts one append's outcome: `ingested` per type of each added event, `duplicates`. */
  countAppend(backend: string, result: AppendResult): void;
  /** Records a successful read of `backend` (resets its lag). */
  markRead(backend: string, nowMs?: number): void;
  /** Drops the lag series of a removed backend. */
  forget(backend: string): void;
}

/** Distinct `type` label values per backend before the rest count as `other`. */
export const MAX_TYPE_LABELS = 200;

/**
 * Registers the ingestion metrics in `registry`. Call it once per registry (at boot) and share the
 * result; prom-client refuses a second registration of the same names.
 */
export function ingestMetrics(registry: Registry): IngestMetrics {
  const lastRead = new Map<string, number>();
  // Types come from backends: past MAX_TYPE_LABELS per backend they count as `other`, so a
  // misbehaving backend cannot grow the number of series without bound.
  const typesSeen = new Map<string, Set<string>>();
  const typeLabel = (backend: string, type: string): string => {
    let seen = typesSeen.get(backend);
    if (!seen) typesSeen.set(backend, (seen = new Set()));
    if (seen.has(type)) return type;
    if (seen.size >= MAX_TYPE_LABELS) return 'other';
    seen.add(type);
    return type;
  };
  const counter = <L extends string>(name: string, help: string, labelNames: L[]): Counter<L> =>
    new Counter({ name, help, labelNames, registers: [registry] });
  const lag = new Gauge({
    name: 'proto_gateway_ingest_lag_seconds',
    help: 'Seconds since the backend was last read successfully by its ingestor',
    labelNames: ['backend'],
    registers: [registry],
    collect() {
      const now = Date.now();
      for (const [backend, at] of lastRead) this.set({ backend }, Math.max(0, (now - at) / 1000));
    },
  });
  const metrics: IngestMetrics = {
    ingested: counter('proto_gateway_events_ingested_total', 'Events added to the log by ingestion', ['backend', 'type']),
    duplicates: counter('proto_gateway_events_duplicates_total', 'Ingested events dropped as already in the log', ['backend']),
    mappingFailures: counter('proto_gateway_events_mapping_failures_total', 'Legacy records that could not be mapped to events', ['backend']),
    malformed: counter('proto_gateway_events_malformed_total', 'Backend events skipped for a malformed envelope', ['backend']),
    tooLarge: counter('proto_gateway_events_too_large_total', 'Ingested events over events.maxEventBytes, refused once at ingestion', ['backend']),
    errors: counter('proto_gateway_ingest_errors_total', 'Failed ingestion polls, pages or streams', ['backend']),
    lag,
    leaseHeld: new Gauge({
      name: 'proto_gateway_ingest_lease_held',
      help: "1 while this replica holds the backend's ingestion lease (one replica follows each backend), else 0",
      labelNames: ['backend'],
      registers: [registry],
    }),
    countAppend(backend, result) {
      for (const stored of result.appended) metrics.ingested.inc({ backend, type: typeLabel(backend, stored.event.type) });
      if (result.duplicates > 0) metrics.duplicates.inc({ backend }, result.duplicates);
    },
    markRead(backend, nowMs = Date.now()) {
      lastRead.set(backend, nowMs);
    },
    forget(backend) {
      lastRead.delete(backend);
      typesSeen.delete(backend);
      lag.remove({ backend });
      metrics.leaseHeld.remove({ backend });
    },
  };
  return metrics;
}
