/**
 * The body of `POST /subscriptions` (PROTOCOL.md 2.7), checked field by field with bounded sizes
 * (PROTOCOL-NOTES.md, Input limits). Every refusal is a 400 `INVALID_PARAMETER` naming the field.
 * Fields the protocol does not define are ignored. The URL's safety is the SSRF guard's job.
 */
import { randomBytes } from 'node:crypto';
import { invalidField, objectField, stringField, typeListField } from '../../body-fields.ts';
import { parseDuration } from '../../config/duration.ts';

/** Longest `webhook.url`, characters. */
export const MAX_URL_LENGTH = 2048;
/** Longest `webhook.secret`, characters. */
export const MAX_SECRET_LENGTH = 1024;
/** Most entries of `filter.types`. */
export const MAX_FILTER_TYPES = 100;
/** Longest event type or `serviceId`, characters. */
export const MAX_NAME_LENGTH = 200;

/** Highest `webhook.rateLimit.perSecond`. */
export const MAX_RATE_PER_SECOND = 10_000;

/** Key bytes of a `whsec_` secret at least and at most (Standard Webhooks: 24 to 64). */
export const SECRET_KEY_BYTES = { min: 24, max: 64 };

/** Key bytes of a generated secret. */
export const GENERATED_SECRET_BYTES = 32;

/** Longest overlap of a secret rotation, ms (30 days). */
export const MAX_ROTATION_OVERLAP_MS = 30 * 24 * 60 * 60 * 1000;

const WHSEC = /^whsec_([A-Za-z0-9+/]+={0,2})$/;

/** A new secret in the Standard Webhooks form: `whsec_` and the base64 of `GENERATED_SECRET_BYTES` random bytes. */
export function generateSecret(): string {
  return `whsec_${randomBytes(GENERATED_SECRET_BYTES).toString('base64')}`;
}

/**
 * `value` as a secret in the Standard Webhooks form, `whsec_` + base64 of 24 to 64 key bytes: the
 * form receivers' Standard Webhooks libraries decode. Any other string is refused (issue 26), since
 * those libraries would base64-decode it and never verify a signature made with its raw bytes.
 */
export function secretField(value: unknown, name: string): string {
  const text = stringField(value, name, MAX_SECRET_LENGTH);
  const match = WHSEC.exec(text);
  const bytes = match ? Buffer.from(match[1]!, 'base64') : undefined;
  if (!bytes || bytes.toString('base64') !== match![1] || bytes.length < SECRET_KEY_BYTES.min || bytes.length > SECRET_KEY_BYTES.max) {
    throw invalidField(name, `must be whsec_ followed by the base64 of ${SECRET_KEY_BYTES.min} to ${SECRET_KEY_BYTES.max} random bytes (or leave it out: the gateway generates one)`);
  }
  return text;
}

/** A checked `POST /subscriptions/{id}/secret/rotate` body. */
export interface RotationRequest {
  /** The new secret; undefined = generate one. */
  secret?: string;
  /** How long the old secret still signs, ms; undefined = `webhooks.rotationOverlap`. */
  overlapMs?: number;
}

/** Checks a rotation body (an empty body is `{}`); throws `INVALID_PARAMETER` on the first bad field. */
export function parseRotationRequest(body: unknown): RotationRequest {
  const root = objectField(body ?? {}, 'body');
  const request: RotationRequest = {};
  if (root.secret !== undefined) request.secret = secretField(root.secret, 'secret');
  if (root.overlap !== undefined) request.overlapMs = durationField(root.overlap, 'overlap', MAX_ROTATION_OVERLAP_MS);
  return request;
}

/** `value` as a duration string (`0s`, `30m`, `24h`) of at most `maxMs`. */
function durationField(value: unknown, name: string, maxMs: number): number {
  const text = stringField(value, name, 32);
  let ms: number;
  try {
    ms = parseDuration(text);
  } catch {
    throw invalidField(name, 'must be a duration such as 0s, 30m or 24h');
  }
  if (ms > maxMs) throw invalidField(name, `must be at most ${maxMs / 86_400_000}d`);
  return ms;
}


/** A checked subscription request. */
export interface SubscriptionRequest {
  serviceId?: string;
  url: string;
  /** `webhook.rateLimit.perSecond`: attempts a second at most to this endpoint. */
  rateLimit?: { perSecond: number };
  secret?: string;
  types?: string[];
}

/** Checks a parsed JSON body; throws `INVALID_PARAMETER` on the first bad field. */
export function parseSubscriptionRequest(body: unknown): SubscriptionRequest {
  const root = objectField(body, 'body');
  const webhook = objectField(root.webhook, 'webhook');
  const request: SubscriptionRequest = { url: stringField(webhook.url, 'webhook.url', MAX_URL_LENGTH) };
  if (webhook.secret !== undefined) request.secret = secretField(webhook.secret, 'webhook.secret');
  if (webhook.rateLimit !== undefined) {
    const perSecond = objectField(webhook.rateLimit, 'webhook.rateLimit').perSecond;
    if (typeof perSecond !== 'number' || !(perSecond > 0) || perSecond > MAX_RATE_PER_SECOND) {
      throw invalidField('webhook.rateLimit.perSecond', `must be a number above 0 and at most ${MAX_RATE_PER_SECOND}`);
    }
    request.rateLimit = { perSecond };
  }
  if (root.serviceId !== undefined) request.serviceId = stringField(root.serviceId, 'serviceId', MAX_NAME_LENGTH);
  if (root.filter !== undefined) {
    const types = objectField(root.filter, 'filter').types;
    if (types !== undefined) request.types = typeListField(types, 'filter.types', MAX_FILTER_TYPES, MAX_NAME_LENGTH);
  }
  return request;
}





/** A checked `POST /subscriptions/{id}/recover` body: the window on the events' `time`, epoch ms. */
export interface RecoveryRequest {
  sinceMs: number;
  /** Undefined = now. */
  untilMs?: number;
}

/** Checks a recovery body: `since` (required) and `until` as RFC 3339 date-times, `since` not after `until`. */
export function parseRecoveryRequest(body: unknown): RecoveryRequest {
  const root = objectField(body, 'body');
  const request: RecoveryRequest = { sinceMs: timeField(root.since, 'since') };
  if (root.until !== undefined) {
    request.untilMs = timeField(root.until, 'until');
    if (request.untilMs < request.sinceMs) throw invalidField('until', 'must not be before since');
  }
  return request;
}

/** A checked `POST /subscriptions/{id}/enable` body. */
export interface EnableRequest {
  /** Also recover the events appended while it was disabled. */
  recover: boolean;
}

/** Checks an enable body (an empty body is `{}`). */
export function parseEnableRequest(body: unknown): EnableRequest {
  const root = objectField(body ?? {}, 'body');
  if (root.recover !== undefined && typeof root.recover !== 'boolean') throw invalidField('recover', 'must be true or false');
  return { recover: root.recover === true };
}

const DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i;

/** `value` as an RFC 3339 date-time, in epoch ms. */
function timeField(value: unknown, name: string): number {
  const text = stringField(value, name, 64);
  const ms = DATE_TIME.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms)) throw invalidField(name, 'must be an RFC 3339 date-time, e.g. 2030-01-01T00:00:00Z');
  return ms;
}
