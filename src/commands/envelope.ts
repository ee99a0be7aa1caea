/**
 * The envelope check of `POST /commands` (PROTOCOL.md 2.5 and PROTOCOL-NOTES.md, Commands): every
 * required attribute present and well formed, `dataschema` included. The first broken rule is a
 * 400 `INVALID_ENVELOPE` naming the attribute; nothing else about the command is looked at first.
 */
import { ProtoError } from '../errors.ts';
import type { CloudEvent } from '../log/EventLog.ts';
import { isEventTime, PASCAL_CASE } from '../log/cloud-event-rules.ts';

/** A command that passed the envelope check. */
export interface CommandEnvelope extends CloudEvent {
  dataschema: string;
}

/** Longest accepted `id`, in characters (it is a key of the idempotency store). */
export const MAX_ID_LENGTH = 256;
/** Longest accepted `source`, `type` or `dataschema`, in characters. */
export const MAX_ATTRIBUTE_LENGTH = 2048;

/** PascalCase types (PROTOCOL.md 2.5, 6.1). */

/**
 * Returns `body` as a command envelope, or throws 400 `INVALID_ENVELOPE` for the first broken rule.
 * `time` is optional (CloudEvents 1.0 makes it so): a command without one gets `receivedAt`, the
 * time the gateway took it, in place; one that is present must be a date-time with a zone.
 */
export function checkCommandEnvelope(body: unknown, receivedAt: () => Date = () => new Date()): CommandEnvelope {
  if (!isObject(body)) throw invalid('the command must be a JSON object (a CloudEvents envelope)');
  if (body.specversion !== '1.0') throw invalid('specversion must be "1.0"', 'specversion');
  requireText(body, 'id', MAX_ID_LENGTH);
  requireText(body, 'source', MAX_ATTRIBUTE_LENGTH);
  requireText(body, 'type', MAX_ATTRIBUTE_LENGTH);
  if (!PASCAL_CASE.test(body.type as string)) throw invalid('type must be PascalCase, e.g. PlaceOrder', 'type');
  if (body.datacontenttype !== 'application/json') throw invalid('datacontenttype must be "application/json"', 'datacontenttype');
  // dataschema is required on commands (PROTOCOL.md 2.5, rule 6).
  requireText(body, 'dataschema', MAX_ATTRIBUTE_LENGTH);
  if (body.time === undefined) body.time = receivedAt().toISOString();
  if (!isEventTime(body.time)) {
    throw invalid('time must be an ISO 8601 / RFC 3339 date-time with a zone', 'time');
  }
  if (!isObject(body.data)) throw invalid('data must be a JSON object', 'data');
  if (body.correlationid !== undefined) {
    if (typeof body.correlationid !== 'string') throw invalid('correlationid must be a string', 'correlationid');
    requireWellFormed(body.correlationid, 'correlationid');
  }
  return body as CommandEnvelope;
}

function requireText(body: Record<string, unknown>, attribute: string, maxLength: number): void {
  const value = body[attribute];
  if (typeof value !== 'string' || value.length === 0) throw invalid(`${attribute} is required (a non-empty string)`, attribute);
  if (value.length > maxLength) throw invalid(`${attribute} is longer than ${maxLength} characters`, attribute);
  requireWellFormed(value, attribute);
}

/**
 * Text with a lone surrogate (`"\ud800"` is valid JSON) is not Unicode: SQLite and Redis would store
 * it as U+FFFD, so two such ids would be one id there, and what is read back would not be what was sent.
 */
function requireWellFormed(value: string, attribute: string): void {
  if (!value.isWellFormed()) throw invalid(`${attribute} must be well-formed Unicode (it holds a lone surrogate)`, attribute);
}

function invalid(message: string, attribute?: string): ProtoError {
  return new ProtoError('INVALID_ENVELOPE', message, attribute === undefined ? undefined : { attribute });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
