/**
 * Metrics of configuration reloads. Created once per registry at boot. Labels are bounded:
 * `outcome` is one of the words of `ReloadOutcomeName`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** How a reload ended: applied (all of it, or all but what needs a restart), unchanged, invalid (nothing changed), failed (a part could not follow). */
export type ReloadOutcomeName = 'applied' | 'unchanged' | 'invalid' | 'failed';

/** The reload metrics. */
export interface ConfigMetrics {
  /** `proto_gateway_config_reloads_total{outcome}`. */
  reloaded(outcome: ReloadOutcomeName): void;
  /** `proto_gateway_config_generation_timestamp_seconds`: when the running generation was loaded. */
  generation(loadedAtMs: number): void;
}

/** Registers the reload metrics in `registry`; call once per registry (at boot). */
export function configMetrics(registry: Registry): ConfigMetrics {
  const reloads = new Counter({
    name: 'proto_gateway_config_reloads_total',
    help: 'Configuration reloads (SIGHUP or a watched file change) by outcome: applied, unchanged, invalid, failed.',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of ['applied', 'unchanged', 'invalid', 'failed'] as const) reloads.inc({ outcome }, 0);
  const generation = new Gauge({
    name: 'proto_gateway_config_generation_timestamp_seconds',
    help: 'When the running configuration generation was loaded, in seconds since the epoch.',
    registers: [registry],
  });
  return {
    reloaded: (outcome) => reloads.inc({ outcome }),
    generation: (loadedAtMs) => generation.set(loadedAtMs / 1000),
  };
}
