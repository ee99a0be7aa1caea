/**
 * One outbound command request to a backend (undici): a deadline over the whole exchange, a
 * bounded response body, and failures sorted the way the dispatcher retries them. A transport
 * failure is a `ProtoError` (`BACKEND_TIMEOUT` or `BACKEND_UNAVAILABLE`); an abort by the caller's
 * signal (shutdown) rejects with the signal's reason. `sendThroughCircuit` asks the backend's
 * circuit breaker first and tells it how the exchange went.
 */
import { request, type Dispatcher } from 'undici';
import { ProtoError } from '../errors.ts';
import { parseRetryAfter } from '../commands/retry-schedule.ts';
import type { CircuitBreaker } from './circuit-breaker.ts';
import { transportReason } from './backend-http.ts';
import { annotate, failSpan, safeUrl, serverAttributes, SpanKind, startSpan, traceparentOf, type Span } from '../telemetry/tracing.ts';

/** Largest response body read, in bytes; the rest is dropped (a command answer is small). */
export const MAX_ANSWER_BYTES = 1024 * 1024;

/** The request to send. */
export interface CommandRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** Serialised as JSON when defined. */
  body?: unknown;
  /** The backend's connections (`ProtoBackend.connections`); default the global pool. */
  dispatcher?: Dispatcher;
}

/** The backend's answer. */
export interface CommandExchange {
  status: number;
  /** Parsed JSON, the text when not JSON, or undefined when empty. */
  body: unknown;
  /** `Retry-After` in ms, when given. */
  retryAfterMs?: number;
}

/** Sends the request; resolves with any HTTP answer, rejects on transport failure or abort. */
export async function sendCommand(req: CommandRequest, signal: AbortSignal, timeoutMs: number): Promise<CommandExchange> {
  signal.throwIfAborted();
  // One controller, aborted by the caller's signal or the deadline: cheaper per request than
  // AbortSignal.any over AbortSignal.timeout (no composite signal, no weak references to collect).
  const exchange = new AbortController();
  let timedOut = false;
  const deadline = setTimeout(() => {
    timedOut = true;
    exchange.abort();
  }, timeoutMs).unref();
  const onAbort = (): void => exchange.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const res = await request(req.url, {
      method: req.method as 'POST',
      headers: req.body === undefined ? req.headers : { 'content-type': 'application/json', ...req.headers },
      body: req.body === undefined ? undefined : JSON.stringify(req.body),
      signal: exchange.signal,
      dispatcher: req.dispatcher,
    });
    const text = await readAnswer(res.body);
    const answer: CommandExchange = { status: res.statusCode, body: parseBody(text) };
    const retryAfterMs = parseRetryAfter(res.headers['retry-after']);
    if (retryAfterMs !== undefined) answer.retryAfterMs = retryAfterMs;
    return answer;
  } catch (err) {
    if (signal.aborted) throw signal.reason;
    if (timedOut) throw new ProtoError('BACKEND_TIMEOUT', `no answer within ${timeoutMs} ms`);
    // The message lands in the public failure event: the code only, never the backend's address.
    const error = new ProtoError('BACKEND_UNAVAILABLE', `the backend is unreachable (${transportReason(err)})`);
    error.cause = err;
    throw error;
  } finally {
    clearTimeout(deadline);
    signal.removeEventListener('abort', onAbort);
  }
}

/**
 * `sendCommand` behind the backend's circuit: while it is open the request is not sent and a 503
 * `BACKEND_UNAVAILABLE` (with `Retry-After`: when a probe will be let through) is thrown, which the
 * dispatcher retries like any unavailability. A 5xx or no answer counts as a failure; any other
 * answer as a success; an abort (shutdown) tells the circuit nothing.
 */
export async function sendThroughCircuit(circuit: CircuitBreaker, req: CommandRequest, signal: AbortSignal, timeoutMs: number): Promise<CommandExchange> {
  circuit.admit();
  const span = clientSpan(req);
  const traceparent = traceparentOf(span);
  let exchange: CommandExchange;
  try {
    // Tracing on: the backend continues the client span's trace (else the entry's traceparent goes as it is).
    exchange = await sendCommand(traceparent === undefined ? req : { ...req, headers: { ...req.headers, traceparent } }, signal, timeoutMs);
  } catch (err) {
    if (signal.aborted) circuit.released();
    else circuit.failed();
    failSpan(span, err);
    span.end();
    throw err;
  }
  if (exchange.status >= 500) circuit.failed();
  else circuit.succeeded();
  annotate(span, () => ({ 'http.response.status_code': exchange.status, ...(exchange.status >= 400 && { 'error.type': String(exchange.status) }) }));
  span.end();
  return exchange;
}

/** The client span of a command request (HTTP client conventions; the URL without user info or query). */
function clientSpan(req: CommandRequest): Span {
  return startSpan(() => req.method, {
    kind: SpanKind.CLIENT,
    attributes: () => {
      const url = safeUrl(req.url);
      return { 'http.request.method': req.method, ...(url !== undefined && { 'url.full': url }), ...serverAttributes(req.url) };
    },
  });
}

/** True for answers worth another try: 429 and 5xx (other 4xx are final). */
export function isTransientStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** The message of an error answer: the protocol's `error.message`, a legacy `message`, or the status. */
export function answerMessage(exchange: CommandExchange): string {
  const body = exchange.body as { error?: { message?: unknown }; message?: unknown } | undefined;
  const message = typeof body === 'object' && body !== null ? (body.error?.message ?? body.message) : undefined;
  return typeof message === 'string' && message !== '' ? message.slice(0, 1000) : `the backend answered ${exchange.status}`;
}

/**
 * The answer's text, cut at `MAX_ANSWER_BYTES` (the rest is not read). Listens for the body's
 * events rather than iterating it: no async iterator and end-of-stream watcher per delivery.
 */
function readAnswer(body: Dispatcher.ResponseData['body']): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err: Error | undefined): void => {
      body.off('data', onData).off('end', onEnd).off('error', settle).off('close', onClose);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= MAX_ANSWER_BYTES) return void chunks.push(chunk);
      settle(undefined);
      // Destroying a body not read to its end makes undici emit an abort error: nobody waits for it.
      body.on('error', () => {}).destroy();
    };
    const onEnd = (): void => settle(undefined);
    const onClose = (): void => settle(new Error('the answer ended early'));
    body.on('data', onData).on('end', onEnd).on('error', settle).on('close', onClose);
  });
}

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
