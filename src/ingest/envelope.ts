/**
 * The check of a CloudEvents 1.0 envelope as PROTOCOL.md 2.5 defines it, applied to every event a
 * proto backend hands the gateway before it enters the log.
 */
import type { CloudEvent } from '../log/EventLog.ts';
import { isEventTime, PASCAL_CASE } from '../log/cloud-event-rules.ts';

/** The outcome of `checkEventEnvelope`: the event, or the first rule it breaks. */
export type EnvelopeCheck = { ok: true; event: CloudEvent } | { ok: false; reason: string };


/**
 * Checks `value` against the envelope rules of PROTOCOL.md 2.5. On success the returned event is
 * a shallow copy of `value`: extension attributes are kept as received.
 */
export function checkEventEnvelope(value: unknown): EnvelopeCheck {
  if (!isObject(value)) return fail('the event is not a JSON object');
  const reason = requiredAttributeProblem(value) ?? optionalAttributeProblem(value);
  if (reason) return fail(reason);
  return { ok: true, event: { ...value } as CloudEvent };
}

function requiredAttributeProblem(event: Record<string, unknown>): string | undefined {
  if (event.specversion !== '1.0') return 'specversion must be "1.0"';
  for (const name of ['id', 'source', 'type'] as const) {
    if (!isNonEmptyString(event[name])) return `${name} must be a non-empty string`;
  }
  if (!PASCAL_CASE.test(event.type as string)) return `type "${event.type}" is not PascalCase`;
  if (event.datacontenttype !== 'application/json') return 'datacontenttype must be "application/json"';
  if (!isEventTime(event.time)) return 'time must be an RFC 3339 / ISO 8601 date-time with a zone';
  if (!isObject(event.data)) return 'data must be a JSON object';
  return undefined;
}

function optionalAttributeProblem(event: Record<string, unknown>): string | undefined {
  if (event.dataschema !== undefined && !(typeof event.dataschema === 'string' && URL.canParse(event.dataschema))) {
    return 'dataschema must be an absolute URI';
  }
  if (event.correlationid !== undefined && typeof event.correlationid !== 'string') {
    return 'correlationid must be a string';
  }
  return undefined;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isNonEmptyString(value: unknown): value is string {
  return typeof value === 'string' && value.length > 0;
}

function fail(reason: string): EnvelopeCheck {
  return { ok: false, reason };
}
