/**
 * Durations and sizes as the configuration writes them (DESIGN.md, Configuration contract):
 * `500ms`, `5s`, `10m`, `2h`, `30d`; `10b`, `512kb`, `1mb`, `2gb` (binary: 1mb = 2^20 bytes).
 * The JSON Schema of the config uses the same patterns, so a value that passed it always parses.
 */

const durationUnits: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const sizeUnits: Record<string, number> = { b: 1, kb: 2 ** 10, mb: 2 ** 20, gb: 2 ** 30 };

/** Pattern of a duration string: an integer and one of `ms`, `s`, `m`, `h`, `d`. */
export const durationPattern = /^([0-9]+)(ms|s|m|h|d)$/;

/** Pattern of a size string: an integer and one of `b`, `kb`, `mb`, `gb` (any letter case). */
export const sizePattern = /^([0-9]+)([kmg]?b)$/i;

/** `30s` → 30000. Milliseconds; throws `RangeError` on anything that is not a duration string. */
export function parseDuration(text: string): number {
  const match = durationPattern.exec(text);
  if (!match) throw new RangeError(`not a duration: "${text}" (expected e.g. 500ms, 5s, 10m, 2h, 30d)`);
  return Number(match[1]) * durationUnits[match[2]];
}

/** `1mb` → 1048576. Bytes, binary units; throws `RangeError` on anything that is not a size string. */
export function parseSize(text: string): number {
  const match = sizePattern.exec(text);
  if (!match) throw new RangeError(`not a size: "${text}" (expected e.g. 10b, 512kb, 1mb)`);
  return Number(match[1]) * sizeUnits[match[2].toLowerCase()];
}
