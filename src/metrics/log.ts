/**
 * Log metrics: its size, read when scraped.
 */
import { Gauge, type Registry } from 'prom-client';
import type { EventLog } from '../log/EventLog.ts';

/** Registers `proto_gateway_log_events` (events currently in the log) and `proto_gateway_log_head_position`. */
export function logMetrics(registry: Registry, log: EventLog): void {
  new Gauge({
    name: 'proto_gateway_log_events',
    help: 'Events currently in the log.',
    registers: [registry],
    async collect() {
      this.set(await log.count());
    },
  });
  new Gauge({
    name: 'proto_gateway_log_head_position',
    help: 'Position of the newest event in the log (grows by one per appended event).',
    registers: [registry],
    async collect() {
      this.set(await log.head());
    },
  });
}

/**
 * Registers `proto_gateway_log_retention_held_back`: events the retention limits would delete but a
 * durable reader (the webhook fan-out) has not read yet. Returns the setter the pruner calls.
 */
export function retentionHeldBack(registry: Registry): (count: number) => void {
  const gauge = new Gauge({
    name: 'proto_gateway_log_retention_held_back',
    help: 'Events past the retention limits kept because a durable reader (webhook fan-out) has not read them yet.',
    registers: [registry],
  });
  return (count) => gauge.set(count);
}
