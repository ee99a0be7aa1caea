/**
 * Metrics of the admission path (`src/edge/`): refusals by quota, and slots held. Labels are
 * bounded: `quota` names a pool or a stored bound (`streams`, `mcp.sessions`, `a2a.tasks`,
 * `a2a.pushConfigs`, `a2a.pendingPush`), `limit` is `principal`, `task` or `global`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** Which bound refused: one caller's share, one A2A task's share, or the whole pool. */
export type QuotaLimit = 'principal' | 'task' | 'global';

/** What the admission path reports. */
export interface AdmissionMetrics {
  /** A request was refused by a quota (`proto_gateway_quota_refusals_total{quota,limit}`). */
  refused(quota: string, limit: QuotaLimit): void;
  /** Slots held by one quota changed by `delta` (`proto_gateway_quota_slots{quota}`). */
  held(quota: string, delta: number): void;
}

/** Registers the admission metrics in `registry` (once per registry). */
export function admissionMetrics(registry: Registry): AdmissionMetrics {
  const refusals = new Counter({
    name: 'proto_gateway_quota_refusals_total',
    help: 'Requests refused by a quota (per principal or per task: 429; global: 503), and A2A push notifications dropped by the pending bound.',
    labelNames: ['quota', 'limit'],
    registers: [registry],
  });
  const slots = new Gauge({
    name: 'proto_gateway_quota_slots',
    help: 'Slots held in each quota pool (open streams of every transport, MCP sessions).',
    labelNames: ['quota'],
    registers: [registry],
  });
  return {
    refused: (quota, limit) => refusals.inc({ quota, limit }),
    held: (quota, delta) => slots.inc({ quota }, delta),
  };
}

/** Metrics that count nothing (unit tests of one component). */
export const NO_ADMISSION_METRICS: AdmissionMetrics = { refused: () => undefined, held: () => undefined };
