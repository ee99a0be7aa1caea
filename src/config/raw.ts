/**
 * Guarded access to the parsed config before it is known to be valid: the semantic checks run
 * beside the schema check (so every problem is reported at once) and must not trip over bad shapes.
 */

/** A parsed YAML mapping, or an empty one for anything else. */
export type RawMap = Record<string, unknown>;

/** `value` when it is a mapping, else an empty mapping. */
export function asMap(value: unknown): RawMap {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as RawMap) : {};
}

/** `value` when it is a sequence, else an empty one. */
export function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** `value` when it is a string, else undefined. */
export function asText(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

/** The mappings of a sequence with their indexes. */
export function entries(value: unknown): [number, RawMap][] {
  return asList(value).map((item, index): [number, RawMap] => [index, asMap(item)]);
}

/** The legacy backends of the config with their indexes. */
export function legacyBackends(config: RawMap): [number, RawMap][] {
  return entries(config.backends).filter(([, backend]) => backend.kind === 'legacy');
}
