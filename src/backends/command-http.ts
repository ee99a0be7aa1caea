/**
 * One outbound command request to a backend (undici): a deadline over the whole exchange, a
 * bounded response body, and failures sorted the way the dispatcher retries them. A transport
 * failure is a `ProtoError` (`BACKEND_TIMEOUT` or `BACKEND_UNAVAILABLE`); an abort by the caller's
 * signal (shutdown) rejects with the signal's reason. `sendThroughCircuit` asks the backend's
 * circuit breaker first and tells it how the exchange went.
 */
import { getGlobalDispatcher, type Dispatcher } from 'undici';
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
export function sendCommand(req: CommandRequest, signal: AbortSignal, timeoutMs: number): Promise<CommandExchange> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => new Exchange(signal, resolve, reject).start(req, timeoutMs));
}

/**
 * One command request on undici's lowest level, `dispatch`, with this object as its handler: the
 * answer's chunks are gathered here. `request()` made a promise wrapper, a response stream and an
 * abort listener per command, and its caller an `AbortController`: 57 µs of CPU per exchange
 * against 46 µs this way, measured in one process against the commands-e2e backend (issue 29).
 * Settles once, with the first of: the answer; the deadline (`BACKEND_TIMEOUT`, even while the
 * request still waits for a connection: it is then aborted when it gets one, never sent); the
 * caller's signal (its reason); a transport failure (`BACKEND_UNAVAILABLE`). Settled before the
 * answer ended, it aborts the request, and the connection goes with it.
 */
class Exchange implements Dispatcher.DispatchHandler {
  readonly #resolve: (exchange: CommandExchange) => void;
  readonly #reject: (err: unknown) => void;
  #controller: Dispatcher.DispatchController | undefined;
  #deadline: NodeJS.Timeout | undefined;
  readonly #signal: AbortSignal;
  #settled = false;
  #status = 0;
  #retryAfter: string | string[] | undefined;
  #chunks: Buffer[] = [];
  /** Bytes of the answer received (kept or not). */
  #size = 0;

  constructor(signal: AbortSignal, resolve: (exchange: CommandExchange) => void, reject: (err: unknown) => void) {
    this.#signal = signal;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  start(req: CommandRequest, timeoutMs: number): void {
    this.#deadline = setTimeout(() => this.#settle(undefined, new ProtoError('BACKEND_TIMEOUT', `no answer within ${timeoutMs} ms`)), timeoutMs).unref();
    abortsOf(this.#signal).add(this);
    try {
      const url = new URL(req.url);
      (req.dispatcher ?? getGlobalDispatcher()).dispatch({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: req.method as Dispatcher.HttpMethod,
        headers: req.body === undefined ? req.headers : { 'content-type': 'application/json', ...req.headers },
        body: req.body === undefined ? undefined : JSON.stringify(req.body),
      }, this);
    } catch (err) {
      this.onResponseError(null, err as Error);
    }
  }

  /** The caller's signal ended the exchange (shutdown). */
  abort(reason: unknown): void {
    this.#settle(undefined, reason);
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.#controller = controller;
    // Settled while waiting for a connection (deadline, shutdown): it is not sent.
    if (this.#settled) controller.abort(new Error('the command exchange ended before its request was sent'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: Record<string, string | string[] | undefined>): void {
    this.#status = statusCode;
    this.#retryAfter = headers['retry-after'];
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.#settled) return;
    this.#size += chunk.length;
    if (this.#size <= MAX_ANSWER_BYTES) return void this.#chunks.push(chunk);
    // The answer is its first MAX_ANSWER_BYTES (this chunk's part within them included); the rest is not read.
    this.#chunks.push(chunk.subarray(0, chunk.length - (this.#size - MAX_ANSWER_BYTES)));
    this.onResponseEnd();
    controller.abort(new Error('the answer is larger than the gateway reads'));
  }

  onResponseEnd(): void {
    const answer: CommandExchange = { status: this.#status, body: parseBody(Buffer.concat(this.#chunks).toString('utf8')) };
    const retryAfterMs = parseRetryAfter(Array.isArray(this.#retryAfter) ? this.#retryAfter[0] : this.#retryAfter);
    if (retryAfterMs !== undefined) answer.retryAfterMs = retryAfterMs;
    this.#settle(answer);
  }

  onResponseError(_controller: Dispatcher.DispatchController | null, err: Error): void {
    // The message lands in the public failure event: the code only, never the backend's address.
    const error = new ProtoError('BACKEND_UNAVAILABLE', `the backend is unreachable (${transportReason(err)})`);
    error.cause = err;
    this.#settle(undefined, error);
  }

  #settle(answer: CommandExchange | undefined, err?: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    clearTimeout(this.#deadline);
    abortsOf(this.#signal).delete(this);
    if (answer) return this.#resolve(answer);
    this.#reject(err);
    this.#controller?.abort(err instanceof Error ? err : new Error('the command exchange ended'));
  }
}

/** The exchanges each caller's signal aborts: one listener per signal, not one per command (`addEventListener` was a visible cost of each). */
const exchangesBySignal = new WeakMap<AbortSignal, Set<Exchange>>();

function abortsOf(signal: AbortSignal): Set<Exchange> {
  let exchanges = exchangesBySignal.get(signal);
  if (!exchanges) {
    const all = new Set<Exchange>();
    signal.addEventListener('abort', () => {
      for (const exchange of [...all]) exchange.abort(signal.reason);
    }, { once: true });
    exchangesBySignal.set(signal, all);
    exchanges = all;
  }
  return exchanges;
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

function parseBody(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
