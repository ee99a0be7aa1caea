/**
 * One section of the configuration (`webhooks:`, `sse:`…), as the feature that owns it describes it
 * (STYLE.md rule 7: each feature owns its config section). `config/` keeps the loading machinery
 * and takes the sections as input; the list of sections is assembled beside `app.ts`
 * (`src/gateway-config.ts`), so `config/` imports no feature.
 */
import type { SchemaFiles } from './embedded-schemas.ts';
import type { RawMap } from './raw.ts';
import type { GatewayConfig } from './types.ts';
import type { Reporter } from './yaml-source.ts';

/** A top-level key of the configuration. */
export type SectionKey = Exclude<keyof GatewayConfig, 'file'>;

/** What a section's defaults resolve against. */
export interface SectionContext {
  /** The config file's directory (relative paths resolve against it). */
  dir: string;
  /** The embedded JSON Schema files read at load (`schemaFile`, `records[].schema`), by config path. */
  schemaFiles: SchemaFiles;
}

/** A JSON Schema (draft-07) object. */
export type JsonSchema = Record<string, unknown>;

/** One section: its schema piece, its checks a JSON Schema cannot express, its defaults. */
export interface ConfigSection<K extends SectionKey = SectionKey> {
  /** The top-level key. */
  key: K;
  /** The JSON Schema of the section's value (`properties.<key>` of the whole schema). */
  schema?: JsonSchema;
  /** Named schemas the piece refers to (`#/definitions/<name>`), beside the shared ones of `config/`. */
  definitions?: Record<string, JsonSchema>;
  /**
   * Checks a JSON Schema cannot express, on the raw (not yet valid) whole config: they run beside
   * the schema check so every problem is reported at once, and must not trip over bad shapes.
   */
  check?(config: RawMap, report: Reporter): void;
  /** Checks of files the section names (read once the gateway runs), relative to `baseDir`. */
  checkFiles?(config: RawMap, baseDir: string, report: Reporter): Promise<void>;
  /** The section's normalised value with every default applied (`undefined`: the section is off and stays absent). */
  defaults(value: unknown, context: SectionContext): GatewayConfig[K] | undefined;
}

/** Every section of the configuration, by key (the type makes the list complete). */
export type ConfigSections = { [K in SectionKey]: ConfigSection<K> };
