/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/, "Signature scheme"): the headers
 * `webhook-id`, `webhook-timestamp` (unix seconds) and, when the subscription has a secret,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`. During a secret
 * rotation's overlap the header holds one signature per secret, space-separated, the new one
 * first (Standard Webhooks allows several; a receiver accepts the message when one verifies).
 *
 * A `whsec_` secret is the base64 of the key bytes after the prefix (the Standard Webhooks form,
 * the only form the API accepts and generates since issue 26); any other string is a secret stored
 * before then, used as its UTF-8 bytes (README, "Webhooks": how receivers verify those).
 *
 * What is computed once and what per attempt: the key (decoded and prepared as a `KeyObject`) once
 * per secret (`WebhookSigner`); the HMAC per attempt, because the signed content holds the
 * attempt's `webhook-timestamp` and receivers refuse a timestamp outside their tolerance (five
 * minutes by default in the Standard Webhooks libraries), which retries hours apart would be. The
 * HMAC is fed the id, timestamp and body in parts: the body is never copied into a longer string.
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';

const WHSEC_PREFIX = 'whsec_';

/** Prepared keys a `WebhookSigner` keeps at most (one per secret in use); beyond, it starts over. */
export const MAX_PREPARED_KEYS = 10_000;

/** The HMAC key bytes of a subscription secret. */
export function signingKey(secret: string): Buffer {
  return secret.startsWith(WHSEC_PREFIX) ? Buffer.from(secret.slice(WHSEC_PREFIX.length), 'base64') : Buffer.from(secret, 'utf8');
}

/** `v1,<base64 signature>` of one message. */
export function signature(key: Buffer | KeyObject, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(id).update('.').update(String(timestampSeconds)).update('.').update(body).digest('base64');
  return `v1,${mac}`;
}

/**
 * The Standard Webhooks headers of one delivery attempt (plus the JSON content type). `id` is the
 * message id, stable across the retries of one event to one subscription; `timestampSeconds` is
 * the time of this attempt, which receivers compare with their clock.
 */
export function webhookHeaders(id: string, timestampSeconds: number, body: string, secret?: string | readonly string[]): Record<string, string> {
  return headersWith(id, timestampSeconds, body, secretList(secret).map(signingKey));
}

/** A secret or a list of secrets as a list (an empty string signs nothing). */
function secretList(secret: string | readonly string[] | undefined): readonly string[] {
  if (secret === undefined) return [];
  return typeof secret === 'string' ? (secret ? [secret] : []) : secret.filter(Boolean);
}

/** `webhookHeaders` with each secret's key prepared once. */
export class WebhookSigner {
  readonly #keys = new Map<string, KeyObject>();

  /** As `webhookHeaders`. */
  headers(id: string, timestampSeconds: number, body: string, secret?: string | readonly string[]): Record<string, string> {
    return headersWith(id, timestampSeconds, body, secretList(secret).map((s) => this.#key(s)));
  }

  #key(secret: string): KeyObject {
    let key = this.#keys.get(secret);
    if (!key) {
      if (this.#keys.size >= MAX_PREPARED_KEYS) this.#keys.clear();
      key = createSecretKey(signingKey(secret));
      this.#keys.set(secret, key);
    }
    return key;
  }
}

function headersWith(id: string, timestampSeconds: number, body: string, keys: ReadonlyArray<Buffer | KeyObject>): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
  };
  if (keys.length > 0) headers['webhook-signature'] = keys.map((key) => signature(key, id, timestampSeconds, body)).join(' ');
  return headers;
}
