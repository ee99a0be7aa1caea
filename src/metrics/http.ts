/**
 * HTTP metrics: requests and their duration by route pattern, method and status. The route label
 * is the matched pattern (`/services/:id/*`) or `unmatched`, never a raw path.
 */
import { Counter, Histogram, type Registry } from 'prom-client';
import { HotCounter, HotHistogram } from './hot.ts';

export interface HttpMetrics {
  observe(route: string, method: string, status: number, seconds: number): void;
}

/** Registers `proto_gateway_http_requests_total` and `proto_gateway_http_request_duration_seconds`. */
export function httpMetrics(registry: Registry): HttpMetrics {
  const labelNames = ['route', 'method', 'status'] as const;
  const requests = new HotCounter(new Counter({
    name: 'proto_gateway_http_requests_total',
    help: 'HTTP requests answered, by route pattern, method and status.',
    labelNames,
    registers: [registry],
  }));
  const duration = new HotHistogram(new Histogram({
    name: 'proto_gateway_http_request_duration_seconds',
    help: 'Time to answer HTTP requests (to the end of the response), by route pattern, method and status.',
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
    registers: [registry],
  }));
  return {
    observe(route, method, status, seconds) {
      // Every request counts here: label sets found by one lookup (hot.ts), not validated and hashed per call.
      const key = `${route}\0${method}\0${status}`;
      const labels = () => ({ route, method, status: String(status) });
      requests.inc(key, labels);
      duration.observe(key, labels, seconds);
    },
  };
}
