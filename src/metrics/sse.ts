/**
 * Metrics of the SSE bridge (`GET /events/stream`). Created once per registry at boot and passed
 * into the hub (STYLE.md: metrics are injected). Labels are bounded: `outcome` of a replay is
 * `replayed` or `reset`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** What a replay request came to: the id was in the log, or it was unknown/pruned (`: reset`). */
export type ReplayOutcome = 'replayed' | 'reset';

/** The SSE metrics, as the hub and its streams report into them. */
export interface SseMetrics {
  /** A stream was opened (`proto_gateway_sse_connections` +1). */
  opened(): void;
  /** A stream ended, for whatever reason (`proto_gateway_sse_connections` -1). */
  closed(): void;
  /** `count` events were written to streams (`proto_gateway_sse_events_sent_total`). */
  sent(count: number): void;
  /** A `Last-Event-ID` was honoured or reset (`proto_gateway_sse_replays_total{outcome}`). */
  replay(outcome: ReplayOutcome): void;
  /** A client was dropped for leaving too much unread (`proto_gateway_sse_slow_consumer_disconnects_total`). */
  slowConsumer(): void;
}

/**
 * Registers the SSE metrics in `registry`. Call it once per registry (at boot) and share the
 * result; prom-client refuses a second registration of the same names.
 */
export function sseMetrics(registry: Registry): SseMetrics {
  const connections = new Gauge({
    name: 'proto_gateway_sse_connections',
    help: 'Open SSE streams (GET /events/stream and per-service streams).',
    registers: [registry],
  });
  // Fan-out writes one event to thousands of streams: they are tallied in a plain number and
  // added to the counter when scraped, so the hot path does no label hashing.
  let unsent = 0;
  new Counter({
    name: 'proto_gateway_sse_events_sent_total',
    help: 'Events written to SSE streams (replayed and live), one per stream.',
    registers: [registry],
    collect() {
      if (unsent > 0) this.inc(unsent);
      unsent = 0;
    },
  });
  const replays = new Counter({
    name: 'proto_gateway_sse_replays_total',
    help: 'Streams opened with a Last-Event-ID: replayed from the log, or reset (id unknown or pruned).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  const slow = new Counter({
    name: 'proto_gateway_sse_slow_consumer_disconnects_total',
    help: 'SSE clients disconnected because they left more than sse.maxBufferedBytes unread.',
    registers: [registry],
  });
  return {
    opened: () => connections.inc(),
    closed: () => connections.dec(),
    sent: (count) => {
      unsent += count;
    },
    replay: (outcome) => replays.inc({ outcome }),
    slowConsumer: () => slow.inc(),
  };
}
