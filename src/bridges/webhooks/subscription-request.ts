/**
 * The body of `POST /subscriptions` (PROTOCOL.md 2.7), checked field by field with bounded sizes
 * (PROTOCOL-NOTES.md, Input limits). Every refusal is a 400 `INVALID_PARAMETER` naming the field.
 * Fields the protocol does not define are ignored. The URL's safety is the SSRF guard's job.
 */
import { invalidField, objectField, stringField, typeListField } from '../../body-fields.ts';

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
  const root = objectField(body, 'body');
  const webhook = objectField(root.webhook, 'webhook');
  const request: SubscriptionRequest = { url: stringField(webhook.url, 'webhook.url', MAX_URL_LENGTH) };
  if (webhook.secret !== undefined) request.secret = stringField(webhook.secret, 'webhook.secret', MAX_SECRET_LENGTH);
  if (root.serviceId !== undefined) request.serviceId = stringField(root.serviceId, 'serviceId', MAX_NAME_LENGTH);
  if (root.filter !== undefined) {
    const types = objectField(root.filter, 'filter').types;
    if (types !== undefined) request.types = typeListField(types, 'filter.types', MAX_FILTER_TYPES, MAX_NAME_LENGTH);
  }
  return request;
}




