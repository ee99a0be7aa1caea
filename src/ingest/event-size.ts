/**
 * `events.maxEventBytes`: one ingested event's JSON at most. A larger event is refused once, where
 * it enters the gateway (a polled record, a proto backend's page or stream), logged and counted,
 * and the cursor moves past it; it never reaches the log, so no stream meets it on delivery.
 */
import type { Logger } from 'pino';
import type { IngestMetrics } from '../metrics/ingest.ts';

/** The default bound: 2 MiB (below grpc-js clients' default 4 MiB receive limit). */
export const DEFAULT_MAX_EVENT_BYTES = 2 * 1024 * 1024;

/** The UTF-8 size of `event` as JSON. */
export function eventBytes(event: unknown): number {
  return Buffer.byteLength(JSON.stringify(event));
}

/** Counts and logs one refused event of `backend` (`id` when known, `bytes` when measured). */
export function refuseTooLarge(metrics: IngestMetrics, logger: Logger, backend: string, maxBytes: number, id: unknown, bytes?: number): void {
  metrics.tooLarge.inc({ backend });
  logger.warn({ id: typeof id === 'string' ? id.slice(0, 200) : undefined, bytes, maxEventBytes: maxBytes }, 'event over events.maxEventBytes refused at ingestion');
}
