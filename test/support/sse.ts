/**
 * A test-side reader of server-sent events (HTML Living Standard, 9.2.6 Interpreting an event
 * stream), for the body of an undici `request` (a Node Readable) or of `fetch` (a web
 * ReadableStream): both are async iterables of bytes.
 *
 * Unlike a browser's EventSource it also reports comment-only blocks (`: keepalive`), so tests can
 * see keepalives, and it never reconnects.
 */

/** One dispatched block of an SSE stream. */
export interface SseRecord {
  /** The `id` field, when the block had one. */
  id?: string;
  /** The `event` field, when the block had one. */
  event?: string;
  /** The `data` lines joined by `\n`; `''` for a comment-only block. */
  data: string;
  /** The `retry` field in ms, when the block had a valid one. */
  retry?: number;
  /** Comment lines of the block, without the leading `:` and one optional space. */
  comments: string[];
}

/** Options of `readSse`. */
export interface ReadSseOptions {
  /** Stop after the first record for which this is true (it is included); default: read to the end. */
  until?: (record: SseRecord, records: SseRecord[]) => boolean;
  /** Reject if `until` has not been met (or the stream has not ended) within this many ms; default 5000. */
  timeoutMs?: number;
}

/** A chunk of a response body. */
type Chunk = Uint8Array | string;

/** A fresh, empty record under construction. */
function emptyBlock(): { record: SseRecord; data: string[]; fields: number } {
  return { record: { data: '', comments: [] }, data: [], fields: 0 };
}

/** Applies one line of the stream to the block being built (9.2.6, "process the field"). */
function applyLine(block: ReturnType<typeof emptyBlock>, line: string): void {
  if (line.startsWith(':')) {
    block.record.comments.push(line.slice(1).replace(/^ /, ''));
    block.fields++;
    return;
  }
  const colon = line.indexOf(':');
  const name = colon < 0 ? line : line.slice(0, colon);
  const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
  if (name === 'data') block.data.push(value);
  else if (name === 'id' && !value.includes('\0')) block.record.id = value;
  else if (name === 'event') block.record.event = value;
  else if (name === 'retry' && /^\d+$/.test(value)) block.record.retry = Number(value);
  else return;
  block.fields++;
}

/** Splits a stream of chunks into lines; `\r\n`, `\r` and `\n` all end a line. */
async function* lines(body: AsyncIterable<Chunk>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of body) {
    pending += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true });
    // A trailing `\r` may be the first half of `\r\n`: keep it until the next chunk.
    const parts = pending.split(/\r\n|\r(?!$)|\n/);
    pending = parts.pop() ?? '';
    yield* parts;
  }
  pending += decoder.decode();
  if (pending !== '') yield* pending.split(/\r\n|\r|\n/);
}

/**
 * The records of an SSE stream, one per blank-line-terminated block that held at least one field
 * or comment. An unterminated block at the end of the stream is discarded, as the standard says.
 */
export async function* sseRecords(body: AsyncIterable<Chunk>): AsyncGenerator<SseRecord> {
  let block = emptyBlock();
  for await (const line of lines(body)) {
    if (line !== '') {
      applyLine(block, line);
      continue;
    }
    if (block.fields > 0) yield { ...block.record, data: block.data.join('\n') };
    block = emptyBlock();
  }
}

/**
 * Reads records from `body` until `until` holds (or the stream ends), then stops reading, which
 * releases the connection. Rejects after `timeoutMs`.
 */
export async function readSse(body: AsyncIterable<Chunk>, options: ReadSseOptions = {}): Promise<SseRecord[]> {
  const { until, timeoutMs = 5000 } = options;
  const records: SseRecord[] = [];
  const iterator = sseRecords(body);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      // A Node Readable (undici) can be destroyed under a pending read; a fetch body is released
      // by its AbortController or when the server ends the stream.
      (body as { destroy?: () => void }).destroy?.();
      void iterator.return(undefined).catch(() => {});
      reject(new Error(`readSse: no matching record within ${timeoutMs} ms (got ${records.length})`));
    }, timeoutMs);
  });
  const read = async (): Promise<SseRecord[]> => {
    for await (const record of iterator) {
      records.push(record);
      if (until?.(record, records)) break;
    }
    return records;
  };
  try {
    return await Promise.race([read(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The records of `records` that carry data (not comment-only), with `data` parsed as JSON. */
export function jsonEvents<T = Record<string, unknown>>(records: SseRecord[]): (SseRecord & { json: T })[] {
  return records.filter((record) => record.data !== '').map((record) => ({ ...record, json: JSON.parse(record.data) as T }));
}
