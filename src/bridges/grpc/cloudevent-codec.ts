/**
 * The gateway's JSON CloudEvents in the CloudEvents protobuf format (`proto/cloudevents.proto`) and
 * back: `id`, `source`, `specversion`, `type` as fields; `time` as a `ce_timestamp` attribute;
 * `dataschema` as `ce_uri` (absolute) or `ce_uri_ref` (relative); `datacontenttype`,
 * `correlationid` and other string extensions as `ce_string` (booleans `ce_boolean`, 32-bit
 * integers `ce_integer`, anything else its JSON as `ce_string`); JSON `data` as `text_data`,
 * `data_base64` as `binary_data`.
 */
import type { CloudEvent } from '../../log/EventLog.ts';

/** A `google.protobuf.Timestamp` as proto-loader gives it (`longs: String`). */
export interface ProtoTimestamp {
  seconds: string | number;
  nanos?: number;
}

/** One attribute value: exactly one member set (the `attr` oneof). */
export interface ProtoAttributeValue {
  ce_boolean?: boolean;
  ce_integer?: number;
  ce_string?: string;
  ce_bytes?: Buffer;
  ce_uri?: string;
  ce_uri_ref?: string;
  ce_timestamp?: ProtoTimestamp;
  attr?: string;
}

/** `io.cloudevents.v1.CloudEvent` as a plain object (proto-loader `keepCase: true`). */
export interface ProtoCloudEvent {
  id: string;
  source: string;
  spec_version: string;
  type: string;
  attributes?: Record<string, ProtoAttributeValue>;
  binary_data?: Buffer;
  text_data?: string;
  proto_data?: unknown;
  data?: string;
}

/** The context attributes that are fields of the message, not `attributes`. */
const FIELDS = new Set(['id', 'source', 'specversion', 'type', 'data', 'data_base64']);
const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** A JSON CloudEvent as a protobuf message object. */
export function toProtoEvent(event: CloudEvent): ProtoCloudEvent {
  const attributes: Record<string, ProtoAttributeValue> = {};
  for (const [name, value] of Object.entries(event)) {
    if (FIELDS.has(name) || value === undefined || value === null) continue;
    attributes[name] = attributeValue(name, value);
  }
  const message: ProtoCloudEvent = { id: event.id, source: event.source, spec_version: event.specversion, type: event.type, attributes };
  if (typeof event.data_base64 === 'string') message.binary_data = Buffer.from(event.data_base64, 'base64');
  else if (event.data !== undefined) message.text_data = typeof event.data === 'string' && !isJson(event.datacontenttype) ? event.data : JSON.stringify(event.data);
  return message;
}

/**
 * A protobuf message as a JSON CloudEvent (what `POST /commands` would receive): attributes back to
 * their JSON form, `text_data` parsed as JSON when the content type is JSON (or absent), else kept
 * as a string; `binary_data` as `data_base64`. Throws a plain `Error` on text that is not JSON.
 */
export function fromProtoEvent(message: ProtoCloudEvent): Record<string, unknown> {
  const event: Record<string, unknown> = { specversion: message.spec_version, id: message.id, source: message.source, type: message.type };
  for (const [name, value] of Object.entries(message.attributes ?? {})) event[name] = jsonValue(value);
  if (message.binary_data !== undefined && message.binary_data !== null) event.data_base64 = Buffer.from(message.binary_data).toString('base64');
  else if (typeof message.text_data === 'string') {
    event.data = isJson(event.datacontenttype as string | undefined) ? JSON.parse(message.text_data) : message.text_data;
  }
  return event;
}

function attributeValue(name: string, value: unknown): ProtoAttributeValue {
  if (name === 'time' && typeof value === 'string' && !Number.isNaN(Date.parse(value))) return { ce_timestamp: timestampOf(value) };
  if (name === 'dataschema' && typeof value === 'string') return URL.canParse(value) ? { ce_uri: value } : { ce_uri_ref: value };
  if (typeof value === 'string') return { ce_string: value };
  if (typeof value === 'boolean') return { ce_boolean: value };
  if (Number.isInteger(value) && (value as number) >= INT32_MIN && (value as number) <= INT32_MAX) return { ce_integer: value as number };
  return { ce_string: JSON.stringify(value) };
}

function jsonValue(value: ProtoAttributeValue): unknown {
  if (value.ce_timestamp) return isoOf(value.ce_timestamp);
  if (value.ce_bytes !== undefined && value.ce_bytes !== null) return Buffer.from(value.ce_bytes).toString('base64');
  for (const key of ['ce_string', 'ce_uri', 'ce_uri_ref', 'ce_boolean', 'ce_integer'] as const) {
    if (value[key] !== undefined && value[key] !== null) return value[key];
  }
  return undefined;
}

/** RFC 3339 → Timestamp, keeping sub-millisecond digits. */
function timestampOf(time: string): ProtoTimestamp {
  const ms = Date.parse(time);
  const fraction = /\.(\d+)/.exec(time)?.[1] ?? '';
  const seconds = Math.floor(ms / 1000);
  const nanos = fraction === '' ? (ms - seconds * 1000) * 1e6 : Number(fraction.padEnd(9, '0').slice(0, 9));
  return { seconds: String(seconds), nanos };
}

/** Timestamp → RFC 3339 in UTC, with as many fraction digits as it has. */
function isoOf(timestamp: ProtoTimestamp): string {
  const seconds = Number(timestamp.seconds);
  const nanos = timestamp.nanos ?? 0;
  const base = new Date(seconds * 1000).toISOString().slice(0, 19);
  return nanos === 0 ? `${base}Z` : `${base}.${String(nanos).padStart(9, '0').replace(/0+$/, '')}Z`;
}

function isJson(contentType: string | undefined): boolean {
  return contentType === undefined || /^application\/(.+\+)?json\b/i.test(contentType);
}
