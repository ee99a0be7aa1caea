/**
 * Metrics of the A2A bridge: `proto_gateway_a2a_tasks_total{state}` (tasks by final state:
 * completed, failed, rejected, canceled) and `proto_gateway_a2a_artifacts_total` (events sent as
 * task artifacts) and `proto_gateway_a2a_push_notifications_total{outcome}` (push notifications:
 * delivered, failed, dropped). Registered once per registry at boot and passed into the bridge.
 */
import { Counter, type Registry } from 'prom-client';

/** The A2A bridge's metrics (plain values; its executor reports `finished` and `artifact`). */
export interface A2aMetrics {
  /** A task reached its final state: `proto_gateway_a2a_tasks_total{state}`. */
  finished(state: 'completed' | 'failed' | 'rejected' | 'canceled'): void;
  /** An event was sent as a task artifact: `proto_gateway_a2a_artifacts_total`. */
  artifact(): void;
  /** A push notification was delivered, failed (retries exhausted) or dropped (queue full). */
  push(outcome: 'delivered' | 'failed' | 'dropped'): void;
}

/** Registers the A2A metrics in `registry` (once per registry). */
export function a2aMetrics(registry: Registry): A2aMetrics {
  const tasks = new Counter({
    name: 'proto_gateway_a2a_tasks_total',
    help: 'A2A tasks by final state (completed, failed, rejected, canceled).',
    labelNames: ['state'],
    registers: [registry],
  });
  const artifacts = new Counter({
    name: 'proto_gateway_a2a_artifacts_total',
    help: 'Events sent to A2A tasks as artifacts.',
    registers: [registry],
  });
  const pushes = new Counter({
    name: 'proto_gateway_a2a_push_notifications_total',
    help: 'A2A push notifications by outcome (delivered, failed, dropped).',
    labelNames: ['outcome'],
    registers: [registry],
  });
  return {
    push: (outcome) => pushes.inc({ outcome }),
    finished: (state) => tasks.inc({ state }),
    artifact: () => artifacts.inc(),
  };
}
