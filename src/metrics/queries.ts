/**
 * Metrics of query execution (`GET /queries/{schema}`). Created once per registry at boot and
 * passed into the query runner. Labels are bounded: `schema` is a catalogue query schema or
 * `unknown`, `outcome` is `ok`, `backend_rejected` (a backend 4xx passed on) or a catalogued error
 * code in lower case.
 */
import { Counter, Histogram, type Registry } from 'prom-client';

/** The query metrics. */
export interface QueryMetrics {
  /** `proto_gateway_queries_total{schema,outcome}` and `proto_gateway_query_duration_seconds{schema,outcome}`. */
  observe(schema: string, outcome: string, seconds: number): void;
}

/** Seconds: from a fast loopback call to a slow backend at the default 10 s timeout. */
const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** Registers the query metrics in `registry`; call once per registry (at boot). */
export function queryMetrics(registry: Registry): QueryMetrics {
  const labelNames = ['schema', 'outcome'] as const;
  const total = new Counter({ name: 'proto_gateway_queries_total', help: 'Queries executed, by catalogue schema and outcome.', labelNames, registers: [registry] });
  const duration = new Histogram({
    name: 'proto_gateway_query_duration_seconds',
    help: 'Time to answer a query (parameters checked, backend called, result mapped), by schema and outcome.',
    labelNames,
    buckets: BUCKETS,
    registers: [registry],
  });
  return {
    observe(schema, outcome, seconds) {
      total.inc({ schema, outcome });
      duration.observe({ schema, outcome }, seconds);
    },
  };
}
