/**
 * The idempotency fingerprint of a command: sha256 of the canonical JSON (keys sorted at every
 * level, RFC 8785 in spirit) of its `type`, `source`, normalised `dataschema` and `data`. `time`
 * and `id` are left out: a client retrying the same command with a fresh `time` is the same command.
 */
import { hash } from 'node:crypto';

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
  // One-shot `hash`: no Hash object per command (its construction was a visible entry of the accept path's profile).
  return hash('sha256', canonicalJson([input.type, input.source, input.dataschema, input.data]), 'base64url');
}

/** JSON with object keys sorted (code-point order) at every level; no whitespace. Built by concatenation: no arrays of parts per level. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  if (Array.isArray(value)) {
    let text = '[';
    for (let i = 0; i < value.length; i++) text += (i === 0 ? '' : ',') + canonicalJson(value[i] ?? null);
    return `${text}]`;
  }
  let text = '{';
  for (const key of Object.keys(value).sort()) {
    const item = (value as Record<string, unknown>)[key];
    if (item !== undefined) text += (text.length === 1 ? '' : ',') + JSON.stringify(key) + ':' + canonicalJson(item);
  }
  return `${text}}`;
}
