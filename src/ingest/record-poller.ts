/**
 * The poller of one legacy `records` entry (DESIGN.md, `records`): every `interval` it GETs
 * `{backend url}{path}` (with `?{cursor.param}={checkpoint}` once a checkpoint exists), maps each
 * record to an event and appends the batch together with the advanced checkpoint in one
 * `append()`, so a crash can neither lose nor double a poll. Re-read records map to the same
 * UUIDv5 ids and the log drops them. Without a `cursor`, every poll re-reads everything.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import type { LegacyBackendConfig, RecordsConfig } from '../config/types.ts';
import type { Checkpoint, CloudEvent, EventLog } from '../log/EventLog.ts';
import type { IngestMetrics } from '../metrics/ingest.ts';
import { DEFAULT_MAX_EVENT_BYTES, eventBytes, refuseTooLarge } from './event-size.ts';
import { failureMessage, getJson, redact } from './http-json.ts';
import { PollLoop } from './poll-loop.ts';
import { cursorValueOf, laterCursor } from './record-cursor.ts';
import { compileRecordMapper, type RecordMapper } from './record-mapper.ts';
import { appendTraced } from '../log/traced-append.ts';
import { inSpan } from '../telemetry/tracing.ts';
import { ingestSpan } from './ingest-span.ts';

/** Options of a `RecordPoller`. */
export interface RecordPollerOptions {
  /** The legacy backend: `id`, `url` (no trailing `/`), `headers` (added to every poll), `source`. */
  backend: Pick<LegacyBackendConfig, 'id' | 'url' | 'headers' | 'source'>;
  /** The `records` entry polled. */
  records: RecordsConfig;
  /** The gateway's public base URL, ending in `/` (typed events' `dataschema`). */
  publicUrl: string;
  log: EventLog;
  logger: Logger;
  metrics: IngestMetrics;
  /** Deadline of one poll request, in milliseconds (default 10 000). */
  timeoutMs?: number;
  /** Ceiling of the backoff after failures, in milliseconds (default 30 000). */
  maxBackoffMs?: number;
  /** Largest response body accepted, in bytes (default 16 MiB). */
  maxBodyBytes?: number;
  /** `events.maxEventBytes`: one mapped event's JSON at most; larger ones are refused once, counted (default 2 MiB). */
  maxEventBytes?: number;
  /** undici dispatcher (default: the global one). */
  dispatcher?: Dispatcher;
}

/** The checkpoint key of a `records` entry: `records:{backendId}:{path}`. */
export function recordsCheckpointKey(backendId: string, path: string): string {
  return `records:${backendId}:${path}`;
}

/** Polls one `records` entry into the log; `start()` begins, `close()` stops (idempotent). */
export class RecordPoller {
  readonly #options: RecordPollerOptions;
  readonly #mapper: RecordMapper;
  readonly #key: string;
  readonly #logger: Logger;
  readonly #loop: PollLoop;
  #lastError: string | undefined;

  /** Compiles the mapping (throws `MappingError` for a field that does not compile). */
  constructor(options: RecordPollerOptions) {
    this.#options = options;
    const { backend, records } = options;
    this.#mapper = compileRecordMapper({ backendId: backend.id, source: backend.source, publicUrl: options.publicUrl, records });
    this.#key = recordsCheckpointKey(backend.id, records.path);
    this.#logger = options.logger.child({ backend: backend.id, records: records.path });
    this.#loop = new PollLoop({
      intervalMs: records.intervalMs,
      maxBackoffMs: options.maxBackoffMs,
      run: (signal) => this.pollOnce(signal),
      onError: (err, retryInMs) => this.#failed(err, retryInMs),
    });
  }

  /** The latest poll's failure (no address), undefined once a poll succeeds. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** Starts polling: the first poll at once, then every `records.intervalMs`. Idempotent. */
  start(): void {
    this.#loop.start();
  }

  /** Stops polling until `resume()`; a poll in flight is aborted (nothing half-written: appends are atomic). */
  pause(): void {
    this.#loop.pause();
  }

  /** Polls again after `pause()`. */
  resume(): void {
    this.#loop.resume();
  }

  /** Stops for good: aborts the poll in flight and waits for it. Idempotent. */
  close(): Promise<void> {
    return this.#loop.close();
  }

  /** One poll (also usable on its own, e.g. by tests or a manual trigger). Throws on a backend failure. */
  async pollOnce(signal?: AbortSignal): Promise<void> {
    const { backend, records, log, metrics } = this.#options;
    const since = records.cursor ? await log.checkpoint(this.#key) : undefined;
    const body = await getJson(this.#url(since), {
      headers: backend.headers,
      timeoutMs: this.#options.timeoutMs,
      maxBodyBytes: this.#options.maxBodyBytes,
      signal,
      dispatcher: this.#options.dispatcher,
    });
    const { events, cursor } = await this.#mapAll(await this.#mapper.items(body), since);
    const checkpoint: Checkpoint | undefined = cursor !== since && cursor !== undefined ? { key: this.#key, value: cursor } : undefined;
    await this.#store(events, checkpoint);
    metrics.markRead(backend.id);
    this.#lastError = undefined;
  }

  /** `{url}{path}` joined with one `/`, with the cursor parameter when a checkpoint exists. */
  #url(since: string | undefined): string {
    const { backend, records } = this.#options;
    const url = new URL(`${backend.url.replace(/\/+$/, '')}/${records.path.replace(/^\/+/, '')}`);
    if (records.cursor && since !== undefined) url.searchParams.set(records.cursor.param, since);
    return url.toString();
  }

  /** Maps every record; a record that fails is skipped, logged and counted. The cursor covers all records read. */
  async #mapAll(items: unknown[], since: string | undefined): Promise<{ events: CloudEvent[]; cursor: string | undefined }> {
    const field = this.#options.records.cursor?.field;
    const events: CloudEvent[] = [];
    let cursor = since;
    for (const record of items) {
      if (field) cursor = laterCursor(cursor, cursorValueOf(record, field));
      try {
        const event = await this.#mapper.mapRecord(record);
        const bytes = eventBytes(event);
        const max = this.#options.maxEventBytes ?? DEFAULT_MAX_EVENT_BYTES;
        if (bytes <= max) events.push(event);
        else refuseTooLarge(this.#options.metrics, this.#logger, this.#options.backend.id, max, event.id, bytes);
      } catch (err) {
        this.#options.metrics.mappingFailures.inc({ backend: this.#options.backend.id });
        this.#logger.warn({ err: (err as Error).message }, 'legacy record skipped: it does not map to an event');
      }
    }
    return { events, cursor };
  }

  async #store(events: CloudEvent[], checkpoint: Checkpoint | undefined): Promise<void> {
    const { backend, log, metrics } = this.#options;
    if (events.length === 0) {
      if (checkpoint) await log.saveCheckpoint(checkpoint);
      return;
    }
    const result = await inSpan(ingestSpan(backend.id, events, 'poll'), () => appendTraced(log, events.map((event) => ({ backend: backend.id, event })), checkpoint));
    metrics.countAppend(backend.id, result);
    this.#logger.debug({ appended: result.appended.length, duplicates: result.duplicates, cursor: checkpoint?.value }, 'records polled');
  }

  #failed(err: unknown, retryInMs: number): void {
    this.#lastError = failureMessage(err);
    this.#options.metrics.errors.inc({ backend: this.#options.backend.id });
    const { backend, records } = this.#options;
    this.#logger.warn({ err: (err as Error)?.message ?? String(err), url: redact(`${backend.url}${records.path}`), retryInMs }, 'records poll failed');
  }
}
