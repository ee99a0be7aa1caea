/**
 * One ingestor per source of events: a `ProtoFollower` per proto backend, a `RecordPoller` per
 * legacy `records` entry. Built from the backends at boot; started and closed together.
 */
import type { Logger } from 'pino';
import type { BackendDirectory } from '../backends/directory.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import type { CloudEvent, EventLog } from '../log/EventLog.ts';
import type { IngestMetrics } from '../metrics/ingest.ts';
import { ProtoFollower } from './proto-follower.ts';
import { RecordPoller } from './record-poller.ts';

/** What every ingestor can do. */
export interface Ingestor {
  start(): void;
  pause(): void;
  resume(): void;
  close(): Promise<void>;
}

export interface IngestorsOptions {
  backends: BackendDirectory;
  log: EventLog;
  publicUrl: string;
  logger: Logger;
  metrics: IngestMetrics;
}

/** The ingestors of every backend, by backend id. */
export function createIngestors(options: IngestorsOptions): Map<string, Ingestor[]> {
  const byBackend = new Map<string, Ingestor[]>();
  for (const backend of options.backends.proto()) {
    byBackend.set(backend.id, [
      new ProtoFollower({
        backendId: backend.id,
        endpoint: () => backend.endpoint(),
        log: options.log,
        mode: backend.config.events.follow,
        intervalMs: backend.config.events.intervalMs,
        headers: backend.config.headers,
        rewrite: (event) => publicEvent(backend, event),
        logger: options.logger,
        metrics: options.metrics,
      }),
    ]);
  }
  for (const backend of options.backends.legacy()) {
    byBackend.set(
      backend.id,
      backend.config.records.map(
        (records) =>
          new RecordPoller({
            backend: backend.config,
            records,
            publicUrl: options.publicUrl,
            log: options.log,
            logger: options.logger,
            metrics: options.metrics,
          }),
      ),
    );
  }
  return byBackend;
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
