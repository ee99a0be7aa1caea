/**
 * Outbound JSON reads from backends (undici): manifests, catalogues, schemas and queries. The
 * backend's configured headers, a timeout, the trace context, a bounded answer, and failures turned
 * into catalogued errors (503 unreachable, 504 timeout).
 */
import { errors, request, type Dispatcher } from 'undici';
import { ProtoError } from '../errors.ts';

/** Largest answer read by default, in bytes; a larger one is a 503 (`BACKEND_UNAVAILABLE`). */
export const MAX_ANSWER_BYTES = 16 * 1024 * 1024;

export interface BackendGetOptions {
  headers?: Record<string, string>;
  timeoutMs: number;
  traceparent?: string;
  signal?: AbortSignal;
  /** Default GET. Nothing is sent in the body. */
  method?: string;
  /** Largest answer accepted, in bytes; default `MAX_ANSWER_BYTES`. */
  maxBytes?: number;
  /** The backend's connections (`ProtoBackend.connections`); default the global pool. */
  dispatcher?: Dispatcher;
}

/** The answer of a backend: status, parsed JSON body (undefined when not JSON) and the headers kept. */
export interface BackendAnswer {
  status: number;
  body: unknown;
  contentType: string;
  /** `Retry-After`, when the backend sent one. */
  retryAfter?: string;
}

/** Requests `url` (GET unless told) and parses a JSON answer; throws `BACKEND_TIMEOUT` or `BACKEND_UNAVAILABLE`. */
export async function getJson(url: string, options: BackendGetOptions): Promise<BackendAnswer> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.traceparent) headers.traceparent = options.traceparent;
  try {
    const res = await request(url, {
      method: (options.method ?? 'GET') as 'GET',
      headers,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: options.signal,
      dispatcher: options.dispatcher,
    });
    const contentType = String(res.headers['content-type'] ?? '');
    const text = await readBounded(res.body, options.maxBytes ?? MAX_ANSWER_BYTES);
    const answer: BackendAnswer = { status: res.statusCode, body: parseJson(text, contentType), contentType };
    const retryAfter = res.headers['retry-after'];
    if (typeof retryAfter === 'string') answer.retryAfter = retryAfter;
    return answer;
  } catch (err) {
    throw backendError(err);
  }
}

/**
 * Maps an undici failure to 504 (timeouts) or 503 (everything else). The answer names only the
 * error code (`ECONNREFUSED`…): transport messages carry the backend's host and port, which must
 * not leave the gateway; the whole failure stays on `cause`, for the log.
 */
export function backendError(err: unknown): ProtoError {
  if (err instanceof ProtoError) return err;
  const timedOut = err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError || err instanceof errors.ConnectTimeoutError;
  const error = timedOut
    ? new ProtoError('BACKEND_TIMEOUT', 'the backend did not answer in time')
    : new ProtoError('BACKEND_UNAVAILABLE', `the backend is unavailable (${transportReason(err)})`);
  error.cause = err;
  return error;
}

/** A failure's code without any address: `ECONNREFUSED`, `UND_ERR_SOCKET`…, else `connection failed`. */
export function transportReason(err: unknown): string {
  const e = err as { code?: unknown; cause?: { code?: unknown } } | undefined;
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  return code && /^[A-Z0-9_]+$/.test(code) ? code : 'connection failed';
}

async function readBounded(body: AsyncIterable<Buffer> & { destroy(): void }, maxBytes: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) {
      body.destroy();
      throw new ProtoError('BACKEND_UNAVAILABLE', `the backend's answer is larger than ${maxBytes} bytes`, { limit: maxBytes });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string, contentType: string): unknown {
  if (!text || !/json/i.test(contentType)) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
