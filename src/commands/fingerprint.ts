/**
 * The idempotency fingerprint of a command: sha256 of the canonical JSON (keys sorted at every
 * level, RFC 8785 in spirit) of its `type`, `source`, normalised `dataschema` and `data`. `time`
 * and `id` are left out: a client retrying the same command with a fresh `time` is the same command.
 */
import { createHash } from 'node:crypto';

/** What the fingerprint covers. */
export interface FingerprintInput {
  type: string;
  source: string;
  /** The catalogue entry as `{schema}/{version}`, whichever form the caller sent. */
  dataschema: string;
  data: unknown;
}

/** The fingerprint, as base64url. */
export function commandFingerprint(input: FingerprintInput): string {
  const canonical = canonicalJson([input.type, input.source, input.dataschema, input.data]);
  return createHash('sha256').update(canonical).digest('base64url');
}

/** JSON with object keys sorted (code-point order) at every level; no whitespace. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item ?? null)).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    const fields = keys.flatMap((key) => {
      const item = (value as Record<string, unknown>)[key];
      return item === undefined ? [] : [`${JSON.stringify(key)}:${canonicalJson(item)}`];
    });
    return `{${fields.join(',')}}`;
  }
  return JSON.stringify(value);
}
