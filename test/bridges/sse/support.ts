/**
 * Helpers of the SSE bridge tests: CloudEvents to append, streams opened with undici (a Node
 * Readable body, destroyed to disconnect), and metric values read from the gateway's registry.
 */
import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import type { Gateway } from '../../../src/app.ts';
import type { CloudEvent } from '../../../src/log/EventLog.ts';
import { jsonEvents, readSse, sseRecords, type ReadSseOptions, type SseRecord } from '../../support/sse.ts';

/** A CloudEvent with a fresh id; `extra` overrides any attribute. */
export function cloudEvent(type: string, extra: Partial<CloudEvent> = {}): CloudEvent {
  return {
    specversion: '1.0',
    id: randomUUID(),
    source: 'urn:test:sse',
    type,
    datacontenttype: 'application/json',
    time: new Date().toISOString(),
    data: {},
    ...extra,
  };
}

/** Appends events of `backend` (default `test`) to the gateway's log; returns them. */
export async function append(gateway: Gateway, events: CloudEvent[], backend = 'test'): Promise<CloudEvent[]> {
  await gateway.log.append(events.map((event) => ({ backend, event })));
  return events;
}

/** An open stream: status, headers, the body to read, and `close()` to disconnect. */
export interface OpenedStream {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: AsyncIterable<Uint8Array> & { destroy(): void };
  /** Disconnects (idempotent). */
  close(): void;
}

/** Opens `GET url` as a stream (`Accept: text/event-stream`) with extra headers. */
export async function openStream(url: string, headers: Record<string, string> = {}): Promise<OpenedStream> {
  const res = await request(url, { headers: { accept: 'text/event-stream', ...headers } });
  return { status: res.statusCode, headers: res.headers, body: res.body, close: () => res.body.destroy() };
}

/** An open stream read record by record. */
export interface LiveStream extends OpenedStream {
  records: AsyncIterator<SseRecord>;
  /** Reads until `count` data records arrived or the stream ended; rejects (and disconnects) after `timeoutMs`. */
  events(count: number, timeoutMs?: number): Promise<SseRecord[]>;
  /** Reads data records up to and including the one with this id; rejects (and disconnects) after `timeoutMs`. */
  eventsUntil(id: string, timeoutMs?: number): Promise<SseRecord[]>;
}

/** Opens a stream and reads its opening `retry:` record, so the subscription is known to exist. */
export async function openLive(url: string, headers: Record<string, string> = {}): Promise<LiveStream> {
  const stream = await openStream(url, headers);
  if (stream.status !== 200) throw new Error(`stream answered ${stream.status}`);
  const records = sseRecords(stream.body)[Symbol.asyncIterator]();
  const first = await records.next();
  if (first.done || first.value.retry === undefined) throw new Error('the stream did not open with retry:');
  return {
    ...stream,
    records,
    events: (count, timeoutMs) => nextEvents(stream, records, (got) => got.length >= count, timeoutMs),
    eventsUntil: (id, timeoutMs) => nextEvents(stream, records, (got) => got.at(-1)?.id === id, timeoutMs),
  };
}

/** Reads data records until `enough(records so far)` or the end of the stream. */
async function nextEvents(
  stream: OpenedStream,
  records: AsyncIterator<SseRecord>,
  enough: (got: SseRecord[]) => boolean,
  timeoutMs = 5000,
): Promise<SseRecord[]> {
  const got: SseRecord[] = [];
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    stream.close();
  }, timeoutMs);
  try {
    while (!enough(got)) {
      const next = await records.next();
      if (next.done) break;
      if (next.value.data !== '') got.push(next.value);
    }
  } catch (err) {
    if (!timedOut) throw err;
  } finally {
    clearTimeout(deadline);
  }
  if (timedOut) throw new Error(`the expected events did not arrive within ${timeoutMs} ms (got ${got.length})`);
  return got;
}

/** Reads a stream until `until` or its end; see `readSse`. */
export function readRecords(stream: OpenedStream, options: ReadSseOptions = {}): Promise<SseRecord[]> {
  return readSse(stream.body, options);
}

/** The ids of the data records. */
export function idsOf(records: SseRecord[]): string[] {
  return jsonEvents(records).map((record) => record.id as string);
}

/** The value of a metric series (summed over matching labels) in the gateway's registry. */
export async function metricValue(gateway: Gateway, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = gateway.registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  return values
    .filter((value) => Object.entries(labels).every(([key, expected]) => String(value.labels[key]) === expected))
    .reduce((sum, value) => sum + value.value, 0);
}
