/**
 * A legacy REST backend described entirely by the configuration: its service entry, its mapped
 * commands and queries, and the records the gateway turns into events.
 */
import type { LegacyBackendConfig } from '../config/types.ts';
import { createUrlRewriter, type UrlRewriter } from '../manifest/rewrite.ts';
import { CircuitBreaker } from './circuit-breaker.ts';

export class LegacyBackend {
  readonly kind = 'legacy';
  /** Shared by dispatch, queries and the pass-through. */
  readonly circuit: CircuitBreaker;
  readonly config: LegacyBackendConfig;
  /** `{publicUrl}services/{id}/`. */
  readonly publicBase: string;
  /** Rewrites any backend address in a string to the public form. */
  readonly rewrite: UrlRewriter;

  constructor(config: LegacyBackendConfig, publicUrl: string) {
    this.config = config;
    this.circuit = new CircuitBreaker({ failures: config.circuit.failures, cooldownMs: config.circuit.cooldownMs });
    this.publicBase = `${publicUrl}services/${config.id}/`;
    this.rewrite = createUrlRewriter([config.url], this.publicBase);
  }

  get id(): string {
    return this.config.id;
  }
}
