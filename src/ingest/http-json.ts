/**
 * Outbound GET of a JSON document from a backend (undici), bounded in time and size. Failures are
 * catalogue errors: `BACKEND_TIMEOUT` when the deadline passes, `BACKEND_UNAVAILABLE` otherwise
 * (connection refused, non-2xx status, body too large, not JSON). Their messages name the path,
 * never the backend's address (they reach `/status`); a transport failure is told by its code
 * (`ECONNREFUSED`…), the failure itself stays on `cause`, as `backend-http.ts` does.
 */
import { errors, request, type Dispatcher } from 'undici';
import { backendError } from '../backends/backend-http.ts';
import { ProtoError } from '../errors.ts';

/** Default deadline of one backend request (headers and body), in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 10_000;

/** Default ceiling of a response body, in bytes (16 MiB). */
export const DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024;

/** Options of `getJson`. */
export interface GetJsonOptions {
  headers?: Record<string, string>;
  /** Deadline of the whole exchange, in milliseconds (default 10 000). */
  timeoutMs?: number;
  /** A larger body is an error (default 16 MiB). */
  maxBodyBytes?: number;
  /** Aborts the request (pause, close). */
  signal?: AbortSignal;
  /** undici dispatcher (default: the global one). */
  dispatcher?: Dispatcher;
}

/** GETs `url` and parses its JSON body; throws a `ProtoError` (see the module comment) or the abort reason. */
export async function getJson(url: string, options: GetJsonOptions = {}): Promise<unknown> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const deadline = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, deadline]) : deadline;
  try {
    const response = await request(url, {
      method: 'GET',
      headers: { accept: 'application/json', ...options.headers },
      signal,
      dispatcher: options.dispatcher,
    });
    if (response.statusCode < 200 || response.statusCode > 299) {
      await response.body.dump().catch(() => undefined);
      throw new ProtoError('BACKEND_UNAVAILABLE', `GET ${pathOf(url)} answered ${response.statusCode}`, { status: response.statusCode });
    }
    const text = await readBounded(response.body, options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES, url);
    return parseJson(text, url);
  } catch (err) {
    throw outboundError(err, url, timeoutMs, deadline, options.signal);
  }
}

/** The body as text; more than `maxBytes` is an error (the body is destroyed, the socket freed). */
export async function readBounded(body: Dispatcher.ResponseData['body'], maxBytes: number, url: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) {
      body.destroy();
      throw new ProtoError('BACKEND_UNAVAILABLE', `GET ${pathOf(url)}: body larger than ${maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function parseJson(text: string, url: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ProtoError('BACKEND_UNAVAILABLE', `GET ${pathOf(url)}: body is not JSON`);
  }
}

/** The error to report: the caller's abort reason, a timeout, or a `BACKEND_UNAVAILABLE`. */
function outboundError(err: unknown, url: string, timeoutMs: number, deadline: AbortSignal, callerSignal?: AbortSignal): unknown {
  if (callerSignal?.aborted) return callerSignal.reason;
  if (err instanceof ProtoError) return err;
  if (deadline.aborted) return new ProtoError('BACKEND_TIMEOUT', `GET ${pathOf(url)}: no answer within ${timeoutMs} ms`);
  return transportError(err, url);
}

/** A transport failure of `GET url`: `BACKEND_UNAVAILABLE` naming its code, not the address; the failure on `cause`. */
export function transportError(err: unknown, url: string): ProtoError {
  const error = new ProtoError('BACKEND_UNAVAILABLE', `GET ${pathOf(url)}: ${backendError(err).message}`);
  error.cause = err;
  return error;
}

/**
 * What an ingestor shows of a failure (`/status`): a `ProtoError`'s message (they name no address),
 * a transport failure's code (`the backend is unavailable (ECONNREFUSED)`), else the message.
 */
export function failureMessage(err: unknown): string {
  if (err instanceof ProtoError) return err.message;
  if (err instanceof errors.UndiciError || typeof (err as { syscall?: unknown })?.syscall === 'string') return backendError(err).message;
  return (err as Error)?.message ?? String(err);
}

/** The path of `url`: what messages name of a backend request (the host and the query stay out). */
export function pathOf(url: string): string {
  return new URL(url).pathname;
}

/** The URL without its query (cursors and keys stay out of logs and error messages). */
export function redact(url: string): string {
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}
