/**
 * The HTTP front: node:http plus the route table. Every request goes through the order of checks of
 * DESIGN.md (route 404/405 → authentication 401 → scope 403 → the handler, which reads its body
 * within the size and depth limits), gets an `X-Request-Id`, is logged once and counted in the
 * metrics. Every refusal is the protocol's error body.
 *
 * Start-up: until `open()` (every route registered, every component started) each request except
 * the routes marked `duringShutdown` (health, readiness) is answered 503 `NOT_READY` with
 * `Retry-After`, never 404: a client treats a 404 as final, a 503 as "try again".
 *
 * Shutdown has two steps. `refuse()`: the listener stays open, but every new request except the
 * routes marked `duringShutdown` (health, readiness) is answered 503 `NOT_READY` with
 * `Connection: close`, so load balancers and clients move elsewhere while the components drain;
 * `settled()` waits for the requests already in flight. `close()`: the listener closes.
 */
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { isProtoError, ProtoError } from '../errors.ts';
import type { HttpMetrics } from '../metrics/http.ts';
import type { Admission } from '../edge/admission.ts';
import { httpOperation } from '../edge/operations.ts';
import { readJson, type BodyLimits } from './body.ts';
import type { Cors } from './cors.ts';
import { sendError, sendReply } from './respond.ts';
import type { Principal, RequestContext, Route } from './route.ts';
import type { Router } from './router.ts';
import { requestTarget } from './target.ts';
import { requestIdOf, traceparentOf } from './trace.ts';
import { httpServerSpan, type HttpServerSpan } from './server-span.ts';

export interface HttpServerOptions {
  router: Router;
  /** The one admission path: caller, scope of the route's operation. */
  admission: Admission;
  cors: Cors;
  limits: BodyLimits;
  logger: Logger;
  metrics: HttpMetrics;
}

/** A listening HTTP front with an idempotent, draining `close()`. */
export interface HttpServer {
  readonly server: Server;
  listen(host: string, port: number): Promise<AddressInfo>;
  /** Start-up is over: every route is answered from now on. Until then, 503 `NOT_READY` (`duringShutdown` routes excepted). */
  open(): void;
  /** Shutdown begins: new requests are answered 503 `NOT_READY` (`duringShutdown` routes excepted), idle keep-alive connections close. Idempotent. */
  refuse(): void;
  /** Resolves once no request admitted before `refuse()` is still being answered, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void>;
  /** Stops accepting, lets in-flight requests finish within `timeoutMs`, then cuts what is left. */
  close(timeoutMs: number): Promise<void>;
}

/** What the request handler shares with the shutdown steps. */
interface ServerState {
  /** Set by `open()`: routes are registered and components started. */
  serving: boolean;
  refusing: boolean;
  /** Admitted requests whose response has not ended (streams included until they end). */
  inFlight: number;
  /** Called whenever `inFlight` drops to zero. */
  onSettled: Set<() => void>;
}

/** Builds the HTTP front. Nothing listens until `listen()`. */
export function createHttpServer(options: HttpServerOptions): HttpServer {
  // Node's default requestTimeout (5 min to receive a request) stays: it bounds slow uploads and
  // does not touch long responses such as event streams.
  const state: ServerState = { serving: false, refusing: false, inFlight: 0, onSettled: new Set() };
  const server = createServer({ keepAliveTimeout: 5_000 }, (req, res) => {
    const span = httpServerSpan(req);
    void span.run(() => handle(options, state, req, res, span));
  });
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (socket.writable) socket.end(unparsedRequestAnswer(err));
  });
  let closing: Promise<void> | undefined;
  return {
    server,
    listen: (host, port) =>
      new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve(server.address() as AddressInfo);
        });
      }),
    open() {
      state.serving = true;
    },
    refuse() {
      if (state.refusing) return;
      state.refusing = true;
      server.closeIdleConnections();
    },
    settled: (timeoutMs) => settled(state, timeoutMs),
    close(timeoutMs) {
      closing ??= drain(server, timeoutMs);
      return closing;
    },
  };
}

function settled(state: ServerState, timeoutMs: number): Promise<void> {
  if (state.inFlight === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      state.onSettled.delete(done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    state.onSettled.add(done);
  });
}

/** Counts a request as in flight until its response ends (or its connection goes). */
function admit(state: ServerState, res: ServerResponse): void {
  state.inFlight += 1;
  res.once('close', () => {
    state.inFlight -= 1;
    if (state.inFlight === 0) for (const done of [...state.onSettled]) done();
  });
}

async function drain(server: Server, timeoutMs: number): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs);
  await closed;
  clearTimeout(deadline);
}

async function handle(options: HttpServerOptions, state: ServerState, req: IncomingMessage, res: ServerResponse, span: HttpServerSpan): Promise<void> {
  const started = process.hrtime.bigint();
  const requestId = requestIdOf(req);
  const log = options.logger.child({ reqId: requestId });
  // An absolute-form target such as `http://[::1` does not parse: that is bad input, not a crash.
  const url = requestTarget(req.url ?? '/');
  const method = req.method ?? 'GET';
  let routeLabel = 'unmatched';
  let route: Route | undefined;
  res.setHeader('X-Request-Id', requestId);
  // While shutting down every answer ends its connection: the client's next request goes elsewhere.
  if (state.refusing) res.setHeader('Connection', 'close');
  options.cors.apply(req, res);
  res.once('close', () => {
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    options.metrics.observe(routeLabel, method, res.statusCode, seconds);
    span.end(routeLabel, res.statusCode);
    log.info({ method, path: url?.pathname, route: routeLabel, status: res.statusCode, ms: Math.round(seconds * 1000) }, 'request');
  });
  try {
    if (!url) throw new ProtoError('INVALID_PARAMETER', 'the request target is not a valid URL');
    const match = state.serving ? options.router.match(method, url.pathname) : startupMatch(options.router, method, url.pathname);
    if ('options' in match) {
      if (!options.cors.preflight(req, res, match.options)) sendReply(res, { status: 204, headers: { Allow: match.options.join(', ') } });
      return;
    }
    routeLabel = match.route.path;
    route = match.route;
    if (state.refusing && !match.route.duringShutdown) throw notReady('the gateway is shutting down');
    admit(state, res);
    const principal = match.route.public
      ? anonymousCaller()
      : await options.admission.admit(match.route.operation ?? httpOperation(match.route.method), { headers: req.headers, query: url.searchParams });
    const ctx: RequestContext = {
      req,
      res,
      params: match.params,
      query: url.searchParams,
      principal,
      requestId,
      // The server span's own context when tracing is on (backends continue this trace), else the caller's or a new one.
      traceparent: span.traceparent ?? traceparentOf(req),
      log,
      json: () => readJson(req, options.limits),
    };
    const reply = await match.route.handle(ctx);
    if (reply) sendReply(res, reply);
  } catch (err) {
    fail(res, log, err, route);
  }
}

/**
 * The answer to a request Node could not parse, written on the socket with the protocol's error
 * body: 431 `HEADERS_TOO_LARGE` for a request head over the limit (a long URL with a large
 * `traceparent`, say), 400 `INVALID_PARAMETER` for anything else that is not HTTP.
 */
function unparsedRequestAnswer(err: NodeJS.ErrnoException): string {
  const error = err.code === 'HPE_HEADER_OVERFLOW'
    ? new ProtoError('HEADERS_TOO_LARGE', 'the request line and headers exceed the size the gateway accepts')
    : new ProtoError('INVALID_PARAMETER', 'the request is not valid HTTP/1.1');
  const body = JSON.stringify(error.toBody());
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

function fail(res: ServerResponse, log: Logger, err: unknown, route?: Route): void {
  if (!isProtoError(err)) log.error({ err }, 'unhandled error');
  else if (err.status >= 500) log.warn({ code: err.code, msg: err.message, cause: (err.cause as Error | undefined)?.message }, 'request failed');
  const error = isProtoError(err) ? err : new ProtoError('INTERNAL', 'internal error');
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (route?.refusal) sendReply(res, route.refusal(error));
  else sendError(res, error);
}

/** Seconds a client is asked to wait before retrying a `NOT_READY` (start-up and shutdown are short). */
const NOT_READY_RETRY_SECONDS = '1';

function notReady(message: string): ProtoError {
  return new ProtoError('NOT_READY', message, undefined, { 'Retry-After': NOT_READY_RETRY_SECONDS });
}

/**
 * The route of a request during start-up: only `duringShutdown` routes (health, readiness) are
 * answered; any other path, registered yet or not, is 503 `NOT_READY` (readiness comes before the
 * route in the order of checks, so an unknown path is not a 404 yet either).
 */
function startupMatch(router: Router, method: string, path: string): ReturnType<Router['match']> {
  let match: ReturnType<Router['match']> | undefined;
  try {
    match = router.match(method, path);
  } catch {
    match = undefined;
  }
  if (match && 'route' in match && match.route.duringShutdown) return match;
  throw notReady('the gateway is starting');
}

function anonymousCaller(): Principal {
  return { id: 'public', scopes: new Set() };
}
