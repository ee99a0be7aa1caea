/**
 * Turns a validated config into `GatewayConfig`: each section applies its own defaults (the values
 * shown in DESIGN.md's Configuration contract), parsing durations to milliseconds and sizes to
 * bytes and resolving relative paths against the config file's directory. Input must have passed
 * the schema and the semantic checks; nothing here reports problems. The readers below are what
 * the sections' `defaults` are written with.
 */
import { dirname } from 'node:path';
import { parseDuration, parseSize } from './duration.ts';
import type { SchemaFiles } from './embedded-schemas.ts';
import { asList, asMap, type RawMap } from './raw.ts';
import type { ConfigSections, SectionContext, SectionKey } from './section.ts';
import type { GatewayConfig } from './types.ts';

/** The normalised config of `raw`, read from the absolute path `file`: every section's defaults, an absent optional section left out. */
export function applyDefaults(raw: RawMap, file: string, schemaFiles: SchemaFiles, sections: ConfigSections): GatewayConfig {
  const context: SectionContext = { dir: dirname(file), schemaFiles };
  const config: Record<string, unknown> = { file };
  for (const key of Object.keys(sections) as SectionKey[]) {
    const value = sections[key].defaults(raw[key], context);
    if (value !== undefined) config[key] = value;
  }
  return config as unknown as GatewayConfig;
}

/** `https://gw.example.com/api//` → `https://gw.example.com/api/`: canonical, exactly one trailing `/`. */
export function canonicalBaseUrl(url: string): string {
  const parsed = new URL(url);
  parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}/`;
  return parsed.href;
}

/** The keys of `raw` among `keys` that are present (absent keys stay absent, not `undefined`). */
export function optional(raw: RawMap, keys: string[]): Record<string, never> {
  return Object.fromEntries(keys.filter((key) => raw[key] !== undefined).map((key) => [key, raw[key]])) as Record<string, never>;
}

/** `value` when it is a string, else `fallback`. */
export function text(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

/** `value` when it is a number, else `fallback`. */
export function num(value: unknown, fallback: number): number {
  return typeof value === 'number' ? value : fallback;
}

/** `value` when it is a boolean, else `fallback`. */
export function flag(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

/** The duration `value` (or `fallback`, e.g. `'10s'`) in ms. */
export function ms(value: unknown, fallback: string): number {
  return parseDuration(text(value, fallback));
}

/** The size `value` (or `fallback`, e.g. `'1mb'`) in bytes. */
export function bytes(value: unknown, fallback: string): number {
  return parseSize(text(value, fallback));
}

/** The entries of a sequence as strings (empty when absent). */
export function strings(value: unknown): string[] {
  return asList(value).map(String);
}

/** A retry schedule (a sequence of durations, or `fallback`) in ms. */
export function schedule(value: unknown, fallback: string[]): number[] {
  return (Array.isArray(value) ? value : fallback).map((entry) => parseDuration(String(entry)));
}

/**
 * The default of a per-principal cap: `preferred`, but never more than half of the matching
 * global cap (at least 1), so one caller never takes a whole shared pool (DESIGN.md, Conventions).
 */
export function perPrincipalDefault(globalMax: number, preferred: number): number {
  return Math.max(1, Math.min(preferred, Math.floor(globalMax / 2)));
}
