/**
 * Metrics of webhook delivery. Created once per registry at boot and passed into the webhook
 * bridge. Labels are bounded: `outcome`, `result`, `status` and `reason` take the few values listed
 * on each metric, never a URL or an id (DESIGN.md, Metric names).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** Queue depth by delivery status, read at scrape time. */
export type QueueDepthSource = () => Promise<Record<string, number>>;

/** The webhook metrics. */
export interface WebhookMetrics {
  /**
   * `proto_gateway_webhook_deliveries_total{outcome}`: deliveries that reached an end:
   * `succeeded`, `dead` (dead-lettered after the last retry), `gone` (410: subscription disabled).
   */
  readonly deliveries: Counter<'outcome'>;
  /**
   * `proto_gateway_webhook_attempts_total{result}`: attempts by result: `success`, `http_error`,
   * `redirect`, `network`, `timeout`, `refused` (the SSRF guard refused the address at delivery), `gone`.
   */
  readonly attempts: Counter<'result'>;
  /** `proto_gateway_webhook_attempt_duration_seconds`: time of one attempt, until the answer's head (or the failure). */
  readonly latency: Histogram;
  /** `proto_gateway_webhook_dead_letters_total`: deliveries dead-lettered (also counted in `deliveries`). */
  readonly deadLetters: Counter;
  /** `proto_gateway_webhook_ssrf_refusals_total{reason}`: URLs refused by the SSRF guard, at registration or delivery. */
  readonly refusals: Counter<'reason'>;
  /**
   * `proto_gateway_webhook_claims_total{outcome}`: how this replica's dispatcher fared with leased
   * claims on the (possibly shared) queue: `claimed` (a due delivery claimed for an attempt),
   * `reclaimed` (claimed from a claimer whose lease ran out: a dead replica's work taken over),
   * `released` (given back unattempted at shutdown, not counted as an attempt), `lost` (this
   * replica's attempt outlived its lease and another claimer took the delivery over: its outcome was
   * refused), `rate_limited` (put back unattempted: its subscription's `rateLimit` had no free slot).
   */
  readonly claims: Counter<'outcome'>;
  /** Makes `proto_gateway_webhook_queue_depth{status}` read `source` when scraped (pending, in-flight, succeeded, dead). */
  trackQueue(source: QueueDepthSource): void;
}

/** Registers the webhook metrics in `registry`; call once per registry and share the result. */
export function webhookMetrics(registry: Registry): WebhookMetrics {
  let depth: QueueDepthSource | undefined;
  new Gauge({
    name: 'proto_gateway_webhook_queue_depth',
    help: 'Webhook deliveries in the queue by status (pending, in-flight, and finished ones kept for inspection).',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      for (const [status, n] of Object.entries((await depth?.()) ?? {})) this.set({ status }, n);
    },
  });
  return {
    deliveries: new Counter({ name: 'proto_gateway_webhook_deliveries_total', help: 'Webhook deliveries that reached an end, by outcome.', labelNames: ['outcome'], registers: [registry] }),
    attempts: new Counter({ name: 'proto_gateway_webhook_attempts_total', help: 'Webhook delivery attempts by result.', labelNames: ['result'], registers: [registry] }),
    latency: new Histogram({
      name: 'proto_gateway_webhook_attempt_duration_seconds',
      help: 'Duration of one webhook delivery attempt.',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    claims: new Counter({ name: 'proto_gateway_webhook_claims_total', help: 'Webhook deliveries this replica took from the queue, by outcome.', labelNames: ['outcome'], registers: [registry] }),
    deadLetters: new Counter({ name: 'proto_gateway_webhook_dead_letters_total', help: 'Webhook deliveries dead-lettered.', registers: [registry] }),
    refusals: new Counter({ name: 'proto_gateway_webhook_ssrf_refusals_total', help: 'Webhook URLs refused by the SSRF guard, by reason.', labelNames: ['reason'], registers: [registry] }),
    trackQueue(source) {
      depth = source;
    },
  };
}
