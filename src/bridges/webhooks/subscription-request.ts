/**
 * The body of `POST /subscriptions` (PROTOCOL.md 2.7), checked field by field with bounded sizes
 * (PROTOCOL-NOTES.md, Input limits). Every refusal is a 400 `INVALID_PARAMETER` naming the field.
 * Fields the protocol does not define are ignored. The URL's safety is the SSRF guard's job.
 */
import { ProtoError } from '../../errors.ts';
import { PASCAL_CASE } from '../../log/cloud-event-rules.ts';

/** Longest `webhook.url`, characters. */
export const MAX_URL_LENGTH = 2048;
/** Longest `webhook.secret`, characters. */
export const MAX_SECRET_LENGTH = 1024;
/** Most entries of `filter.types`. */
export const MAX_FILTER_TYPES = 100;
/** Longest event type or `serviceId`, characters. */
export const MAX_NAME_LENGTH = 200;

/** A CloudEvent type in PascalCase (as `schemas/subscription.json` says). */

/** A checked subscription request. */
export interface SubscriptionRequest {
  serviceId?: string;
  url: string;
  secret?: string;
  types?: string[];
}

/** Checks a parsed JSON body; throws `INVALID_PARAMETER` on the first bad field. */
export function parseSubscriptionRequest(body: unknown): SubscriptionRequest {
  const root = object(body, 'body');
  const webhook = object(root.webhook, 'webhook');
  const request: SubscriptionRequest = { url: string(webhook.url, 'webhook.url', MAX_URL_LENGTH) };
  if (webhook.secret !== undefined) request.secret = string(webhook.secret, 'webhook.secret', MAX_SECRET_LENGTH);
  if (root.serviceId !== undefined) request.serviceId = string(root.serviceId, 'serviceId', MAX_NAME_LENGTH);
  if (root.filter !== undefined) {
    const types = object(root.filter, 'filter').types;
    if (types !== undefined) request.types = eventTypes(types);
  }
  return request;
}

function eventTypes(value: unknown): string[] {
  if (!Array.isArray(value) || value.length > MAX_FILTER_TYPES) {
    throw invalid('filter.types', `must be an array of at most ${MAX_FILTER_TYPES} event types`);
  }
  return [
    ...new Set(
      value.map((type, i) => {
        const text = string(type, `filter.types[${i}]`, MAX_NAME_LENGTH);
        if (!PASCAL_CASE.test(text)) throw invalid(`filter.types[${i}]`, 'must be a CloudEvent type in PascalCase, e.g. OrderPlacedV1');
        return text;
      }),
    ),
  ];
}

function object(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(name, 'must be an object');
  return value as Record<string, unknown>;
}

function string(value: unknown, name: string, maxLength: number): string {
  if (typeof value !== 'string' || value === '' || value.length > maxLength) {
    throw invalid(name, `must be a non-empty string of at most ${maxLength} characters`);
  }
  return value;
}

function invalid(parameter: string, rule: string): ProtoError {
  return new ProtoError('INVALID_PARAMETER', `${parameter} ${rule}`, { parameter });
}
