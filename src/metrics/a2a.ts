/**
 * Metrics of the A2A bridge: `proto_gateway_a2a_tasks_total{state}` (tasks by final state:
 * completed, failed, rejected, canceled) and `proto_gateway_a2a_artifacts_total` (events sent as
 * task artifacts). Registered once per registry at boot and passed into the executor.
 */
import { Counter, type Registry } from 'prom-client';
import type { A2aExecutorMetrics } from '../bridges/a2a/command-executor.ts';

/** Registers the A2A metrics in `registry` (once per registry). */
export function a2aMetrics(registry: Registry): A2aExecutorMetrics {
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
  return {
    finished: (state) => tasks.inc({ state }),
    artifact: () => artifacts.inc(),
  };
}
