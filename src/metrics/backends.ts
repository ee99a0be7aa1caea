/**
 * Backend health metrics, read when scraped: `proto_gateway_backend_up{backend}` (1 when its
 * circuit is not open and, for a proto backend, its manifest was last read successfully) and
 * `proto_gateway_backend_circuit_state{backend}` (0 closed, 1 half-open, 2 open).
 */
import { Gauge, type Registry } from 'prom-client';
import type { BackendDirectory } from '../backends/directory.ts';

const CIRCUIT_VALUE = { closed: 0, 'half-open': 1, open: 2 } as const;

/** Registers the backend gauges over the directory's backends. */
export function backendMetrics(registry: Registry, backends: BackendDirectory): void {
  new Gauge({
    name: 'proto_gateway_backend_up',
    help: 'Whether the backend is usable: its circuit is not open and (proto) its manifest was last read successfully.',
    labelNames: ['backend'],
    registers: [registry],
    collect() {
      this.reset();
      for (const backend of backends.list()) {
        const reachable = backend.kind === 'legacy' || backend.lastError === undefined;
        this.set({ backend: backend.id }, reachable && backend.circuit.state !== 'open' ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: 'proto_gateway_backend_circuit_state',
    help: 'Circuit breaker state per backend: 0 closed, 1 half-open, 2 open.',
    labelNames: ['backend'],
    registers: [registry],
    collect() {
      this.reset();
      for (const backend of backends.list()) this.set({ backend: backend.id }, CIRCUIT_VALUE[backend.circuit.state]);
    },
  });
}
