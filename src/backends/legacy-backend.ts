/**
 * A legacy REST backend described entirely by the configuration: its service entry, its mapped
 * commands and queries, and the records the gateway turns into events.
 */
import type { LegacyBackendConfig } from '../config/types.ts';
import { createUrlRewriter, type UrlRewriter } from '../manifest/rewrite.ts';

export class LegacyBackend {
  readonly kind = 'legacy';
  readonly config: LegacyBackendConfig;
  /** `{publicUrl}services/{id}/`. */
  readonly publicBase: string;
  /** Rewrites any backend address in a string to the public form. */
  readonly rewrite: UrlRewriter;

  constructor(config: LegacyBackendConfig, publicUrl: string) {
    this.config = config;
    this.publicBase = `${publicUrl}services/${config.id}/`;
    this.rewrite = createUrlRewriter([config.url], this.publicBase);
  }

  get id(): string {
    return this.config.id;
  }
}
