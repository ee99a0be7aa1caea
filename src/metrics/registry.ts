/**
 * Metrics of the service registry. Created once per registry at boot and passed into it. Labels
 * are bounded: `change` is one of the few words of `RegistryChange`, never a service id.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** A change the registry made. */
export type RegistryChange = 'created' | 'updated' | 'deleted' | 'paused' | 'resumed';

/** The registry metrics. */
export interface RegistryMetrics {
  /** `proto_gateway_registry_changes_total{change}`: registrations, upserts, removals, pauses and resumes. */
  changed(change: RegistryChange): void;
  /** Makes `proto_gateway_registered_services` read `count` when scraped (services registered at runtime). */
  watchCount(count: () => number): void;
}

/** Registers the registry metrics in `registry`; call once per registry (at boot). */
export function registryMetrics(registry: Registry): RegistryMetrics {
  const changes = new Counter({
    name: 'proto_gateway_registry_changes_total',
    help: 'Changes of the service registry: created, updated, deleted, paused, resumed.',
    labelNames: ['change'],
    registers: [registry],
  });
  let count: (() => number) | undefined;
  new Gauge({
    name: 'proto_gateway_registered_services',
    help: 'Services registered at runtime (POST /services), with or without an endpoint.',
    registers: [registry],
    collect() {
      this.set(count?.() ?? 0);
    },
  });
  return {
    changed: (change) => changes.inc({ change }),
    watchCount: (read) => {
      count = read;
    },
  };
}
