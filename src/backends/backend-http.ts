/**
 * Outbound JSON GETs to backends (undici): the backend's configured headers, a timeout, the trace
 * context, and failures turned into catalogued errors (503 unreachable, 504 timeout).
 */
import { errors, request } from 'undici';
import { ProtoError } from '../errors.ts';

export interface BackendGetOptions {
  headers?: Record<string, string>;
  timeoutMs: number;
  traceparent?: string;
  signal?: AbortSignal;
}

/** The answer of a backend: status and parsed JSON body (undefined when not JSON). */
export interface BackendAnswer {
  status: number;
  body: unknown;
  contentType: string;
}

/** GETs `url` and parses a JSON answer; throws `BACKEND_TIMEOUT` or `BACKEND_UNAVAILABLE`. */
export async function getJson(url: string, options: BackendGetOptions): Promise<BackendAnswer> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  if (options.traceparent) headers.traceparent = options.traceparent;
  try {
    const res = await request(url, {
      method: 'GET',
      headers,
      headersTimeout: options.timeoutMs,
      bodyTimeout: options.timeoutMs,
      signal: options.signal,
    });
    const contentType = String(res.headers['content-type'] ?? '');
    const text = await res.body.text();
    return { status: res.statusCode, body: parseJson(text, contentType), contentType };
  } catch (err) {
    throw backendError(err, url);
  }
}

/** Maps an undici failure to 504 (timeouts) or 503 (everything else). */
export function backendError(err: unknown, url: string): ProtoError {
  const { origin } = new URL(url);
  if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError || err instanceof errors.ConnectTimeoutError) {
    return new ProtoError('BACKEND_TIMEOUT', 'the backend did not answer in time');
  }
  const reason = (err as Error).message ?? String(err);
  return new ProtoError('BACKEND_UNAVAILABLE', 'the backend is unavailable', { reason: reason.split(origin).join('<backend>') });
}

function parseJson(text: string, contentType: string): unknown {
  if (!text || !/json/i.test(contentType)) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
