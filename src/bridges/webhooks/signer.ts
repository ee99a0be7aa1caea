/**
 * Standard Webhooks signing (https://www.standardwebhooks.com/, "Signature scheme"): the headers
 * `webhook-id`, `webhook-timestamp` (unix seconds) and, when the subscription has a secret,
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`.
 *
 * A `whsec_` secret is the base64 of the key bytes after the prefix (the Standard Webhooks form);
 * any other string is used as its UTF-8 bytes.
 */
import { createHmac } from 'node:crypto';

const WHSEC_PREFIX = 'whsec_';

/** The HMAC key bytes of a subscription secret. */
export function signingKey(secret: string): Buffer {
  return secret.startsWith(WHSEC_PREFIX) ? Buffer.from(secret.slice(WHSEC_PREFIX.length), 'base64') : Buffer.from(secret, 'utf8');
}

/** `v1,<base64 signature>` of one message. */
export function signature(key: Buffer, id: string, timestampSeconds: number, body: string): string {
  const mac = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/**
 * The Standard Webhooks headers of one delivery attempt (plus the JSON content type). `id` is the
 * message id, stable across the retries of one event to one subscription; `timestampSeconds` is
 * the time of this attempt, which receivers compare with their clock.
 */
export function webhookHeaders(id: string, timestampSeconds: number, body: string, secret?: string): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
  };
  if (secret !== undefined && secret !== '') headers['webhook-signature'] = signature(signingKey(secret), id, timestampSeconds, body);
  return headers;
}
