/**
 * The mapping of a legacy backend's domain records to CloudEvents (DESIGN.md, `records`), compiled
 * once per `records` entry when the configuration loads. Templates (`type`, `id`, `source`) and
 * expressions (`items`, `time`, `correlation`, `data`) are JSONata (src/mapping/jsonata.ts).
 */
import type { RecordsConfig } from '../config/types.ts';
import type { CloudEvent } from '../log/EventLog.ts';
import {
  compileExpression,
  compileTemplate,
  MappingError,
  type CompiledExpression,
  type CompiledTemplate,
} from '../mapping/jsonata.ts';
import { eventSchemaOf } from '../mapping/names.ts';
import { PASCAL_CASE } from '../log/cloud-event-rules.ts';
import { recordEventId } from './record-id.ts';

/** What a record mapper needs besides the `records` entry. */
export interface RecordMapperOptions {
  /** Id of the legacy backend (part of every event id). */
  backendId: string;
  /** The backend's `source`: the event `source` when `event.source` is not configured. */
  source: string;
  /** The gateway's public base URL (ending in `/`): typed events' `dataschema` starts with it. */
  publicUrl: string;
  records: RecordsConfig;
  /** Clock for events whose `time` expression is absent or yields nothing (epoch ms). Default `Date.now`. */
  now?: () => number;
}

/** A compiled `records` entry. Both methods throw `MappingError` on failure. */
export interface RecordMapper {
  /** The records of one response body (`items` expression; default the body). Never undefined. */
  items(body: unknown): Promise<unknown[]>;
  /** The event of one record. A record that cannot be mapped throws `MappingError` (the caller skips it). */
  mapRecord(record: unknown): Promise<CloudEvent>;
}

interface CompiledRecords {
  items?: CompiledExpression;
  type: CompiledTemplate;
  id: CompiledTemplate;
  source?: CompiledTemplate;
  time?: CompiledExpression;
  correlation?: CompiledExpression;
  data?: CompiledExpression;
}

/** Compiles a `records` entry; a field that does not compile throws `MappingError`. */
export function compileRecordMapper(options: RecordMapperOptions): RecordMapper {
  const { records } = options;
  const compiled: CompiledRecords = {
    items: optional(records.items, compileExpression),
    type: compileTemplate(records.event.type),
    id: compileTemplate(records.event.id),
    source: optional(records.event.source, compileTemplate),
    time: optional(records.event.time, compileExpression),
    correlation: optional(records.event.correlation, compileExpression),
    data: optional(records.event.data, compileExpression),
  };
  const now = options.now ?? Date.now;
  return {
    items: (body) => selectItems(compiled.items, body),
    mapRecord: (record) => mapRecord(compiled, options, now, record),
  };
}

async function selectItems(expression: CompiledExpression | undefined, body: unknown): Promise<unknown[]> {
  const selected = expression ? await expression.evaluate(body) : body;
  if (selected === undefined || selected === null) return [];
  if (Array.isArray(selected)) return selected;
  // JSONata unwraps a one-item sequence into the item itself.
  if (typeof selected === 'object') return [selected];
  throw new MappingError(`items yield ${typeof selected}, not records`);
}

async function mapRecord(
  compiled: CompiledRecords,
  options: RecordMapperOptions,
  now: () => number,
  record: unknown,
): Promise<CloudEvent> {
  const type = await compiled.type.render(record);
  if (!PASCAL_CASE.test(type)) throw new MappingError(`type "${type}" is not PascalCase`);
  const idText = await compiled.id.render(record);
  const event: CloudEvent = {
    specversion: '1.0',
    id: recordEventId(options.backendId, options.records.path, idText),
    source: compiled.source ? await compiled.source.render(record) : options.source,
    type,
    datacontenttype: 'application/json',
    time: await eventTime(compiled.time, record, now),
    data: await eventData(compiled.data, record),
  };
  if (options.records.schema) event.dataschema = dataschemaOf(options.publicUrl, type);
  const correlationId = compiled.correlation ? await compiled.correlation.evaluate(record) : undefined;
  if (typeof correlationId === 'string' && correlationId) event.correlationid = correlationId;
  return event;
}

/** `{publicUrl}events/{schema}/{version}` (PROTOCOL.md 4.4) of a typed event type. */
export function dataschemaOf(publicUrl: string, type: string): string {
  const { schema, version } = eventSchemaOf(type);
  const base = publicUrl.endsWith('/') ? publicUrl : `${publicUrl}/`;
  return `${base}events/${schema}/${version}`;
}

async function eventTime(expression: CompiledExpression | undefined, record: unknown, now: () => number): Promise<string> {
  const value = expression ? await expression.evaluate(record) : undefined;
  if (value === undefined || value === null || value === '') return new Date(now()).toISOString();
  const ms = toEpochMs(value);
  if (ms === undefined) throw new MappingError(`time "${String(value)}" is not a date-time`);
  return new Date(ms).toISOString();
}

/**
 * Epoch milliseconds of a record's time: an ISO 8601 string, or a number — epoch seconds below
 * 1e11 (before 1973 in milliseconds, year 5138 in seconds), epoch milliseconds otherwise.
 */
function toEpochMs(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value < 1e11 ? value * 1000 : value;
  if (typeof value !== 'string') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) || Math.abs(ms) > 8.64e15 ? undefined : ms;
}

async function eventData(expression: CompiledExpression | undefined, record: unknown): Promise<Record<string, unknown>> {
  const data = expression ? await expression.evaluate(record) : record;
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw new MappingError(`data must be a JSON object, got ${Array.isArray(data) ? 'an array' : String(data)}`);
  }
  return data as Record<string, unknown>;
}

function optional<T>(source: string | undefined, compile: (source: string) => T): T | undefined {
  return source === undefined ? undefined : compile(source);
}
