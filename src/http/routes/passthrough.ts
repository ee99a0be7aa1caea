/**
 * Pass-through (http-proxy-3): every path under `/services/{id}/` of a proto backend that the
 * gateway does not answer itself goes to the same path under that backend's endpoint. The caller's
 * credentials never reach the backend; the backend's configured headers, `X-Forwarded-*` and the
 * trace context are added; hop-by-hop headers are dropped; responses (SSE too) stream unbuffered.
 * No answer within the timeout is a 504; an unreachable backend is a 503, as is one that reset the
 * connection before its answer arrived (`details.reason: connection-reset`).
 */
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { Transform } from 'node:stream';
import { createProxyServer } from 'http-proxy-3';
import type { CircuitBreaker } from '../../backends/circuit-breaker.ts';
import type { BackendDirectory } from '../../backends/directory.ts';
import { IDENTITY_HEADERS, identityHeaders } from '../../backends/identity-headers.ts';
import { forwardedCaller } from '../../edge/forwarded-caller.ts';
import { ProtoError } from '../../errors.ts';
import { joinUrl } from '../../manifest/rewrite.ts';
import { sendError } from '../respond.ts';
import type { Route, RequestContext } from '../route.ts';
import { requestTarget } from '../target.ts';

/** RFC 9110 §7.6.1 connection-specific headers, never forwarded. */
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

export interface PassThroughOptions {
  backends: BackendDirectory;
  /** Request headers carrying the caller's credentials (removed). */
  credentialHeaders: string[];
  /** Query parameter carrying the caller's key (removed), if any. */
  credentialQueryParam?: string;
  /** Time allowed until the backend's response headers, in milliseconds. */
  timeoutMs: number;
  /** Largest request body forwarded (`server.bodyLimit`), in bytes. */
  maxBodyBytes: number;
}

interface InFlight {
  /** Backend URLs in response headers (`Location`) become public ones. */
  rewrite: (url: string) => string;
  /** The URL requested from the backend (relative `Location` values resolve against it). */
  target: string;
  timeoutMs: number;
  /** `server.bodyLimit`. */
  maxBodyBytes: number;
  timedOut: boolean;
  tooLarge: boolean;
  /** Request body bytes read so far. */
  received: number;
  /** The request to the backend, once it exists. */
  outgoing?: ClientRequest;
  /** The backend reset the connection (ECONNRESET, EPIPE): whatever it answered before was lost with it. */
  reset: boolean;
  /** The backend's answer, once its headers arrived. */
  response?: IncomingMessage;
}

/** The catch-all routes under `/services/:id/*`, one per method. */
export function passThroughRoutes(options: PassThroughOptions): Route[] {
  const inFlight = new WeakMap<IncomingMessage, InFlight>();
  const proxy = createProxyServer({ xfwd: true, changeOrigin: true, ignorePath: true });
  proxy.on('proxyReq', (proxyReq, req) => {
    const state = inFlight.get(req);
    if (!state) return;
    state.outgoing = proxyReq;
    if (state.tooLarge) return void proxyReq.destroy();
    const timer = setTimeout(() => {
      state.timedOut = true;
      proxyReq.destroy();
    }, state.timeoutMs);
    proxyReq.once('response', () => clearTimeout(timer));
    proxyReq.once('close', () => clearTimeout(timer));
  });
  proxy.on('proxyRes', (proxyRes, req, res) => {
    const state = inFlight.get(req);
    // Connection-specific headers are the backend's own (RFC 9110 §7.6.1): its `Connection: close`
    // (a Node backend says it when it answers before reading the body) would make the gateway close
    // the client's connection under a still-running upload.
    for (const name of ['connection', 'keep-alive']) delete proxyRes.headers[name];
    if (state) {
      state.response = proxyRes;
      rewriteLocations(proxyRes.headers, state);
      // Answered before the upload ended: the rest of the body is read and dropped (within the limit).
      proxyRes.once('end', () => {
        if (!req.complete) dropRestOfBody(req, state.received, state.maxBodyBytes);
      });
    }
    // A stream's headers must reach the client now, not with its first event (which may be far off).
    if (String(proxyRes.headers['content-type']).startsWith('text/event-stream')) {
      process.nextTick(() => {
        if (!res.headersSent) res.flushHeaders();
      });
    }
  });
  const handle = (ctx: RequestContext) => forward(ctx, options, proxy, inFlight);
  return (['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const).map((method) => ({ method, path: '/services/:id/*', handle }));
}

type Proxy = ReturnType<typeof createProxyServer<typeof IncomingMessage, typeof ServerResponse, Error>>;

function forward(ctx: RequestContext, options: PassThroughOptions, proxy: Proxy, inFlight: WeakMap<IncomingMessage, InFlight>): undefined {
  const backend = options.backends.require(ctx.params.id);
  if (backend.kind !== 'proto') throw new ProtoError('NOT_FOUND', `no resource at ${new URL(ctx.req.url ?? '/', 'http://x').pathname}`);
  const declared = Number(ctx.req.headers['content-length']);
  if (declared > options.maxBodyBytes) throw tooLarge(options.maxBodyBytes);
  const target = targetUrl(backend.endpoint(), ctx, options.credentialQueryParam);
  backend.circuit.admit();
  settleCircuit(ctx, backend.circuit);
  stripHeaders(ctx.req, options.credentialHeaders);
  const state: InFlight = { rewrite: backend.rewrite, target, timeoutMs: options.timeoutMs, maxBodyBytes: options.maxBodyBytes, timedOut: false, tooLarge: false, received: 0, reset: false };
  inFlight.set(ctx.req, state);
  const body = ctx.req.pipe(
    limitBody(options.maxBodyBytes, (size) => (state.received = size), () => {
      state.tooLarge = true;
      state.outgoing?.destroy();
      // Nothing more goes to the backend; the rest of the body is read and dropped so the 413 can be sent.
      ctx.req.unpipe();
      ctx.req.resume();
    }),
  );
  const identity = identityHeaders(backend.config.forwardIdentity, forwardedCaller(ctx.principal));
  const headers = { ...backend.config.headers, ...identity, traceparent: ctx.traceparent };
  const agent = backend.connections?.httpAgent;
  proxy.web(ctx.req, ctx.res, { target, headers, buffer: body, ...(agent && { agent }) }, (err) => {
    ctx.log.warn({ backend: backend.id, err: (err as Error).message, timedOut: state.timedOut }, 'pass-through failed');
    state.reset = RESET_CODES.has(String((err as NodeJS.ErrnoException).code));
    if (ctx.res.headersSent) {
      // The backend's whole answer arrived before it went: the client gets all of it, and the rest of
      // its upload is read and dropped rather than cut off. A partial answer can only be cut off.
      if (state.response?.complete) dropRestOfBody(ctx.req, state.received, options.maxBodyBytes);
      else ctx.res.destroy();
      return;
    }
    if (!ctx.req.complete && !state.tooLarge) return answerAfterBody(ctx, state, options.maxBodyBytes);
    sendError(ctx.res, failure(state, options.maxBodyBytes));
  });
  return undefined;
}

/**
 * Reports the call's outcome to the circuit once: a 5xx or no answer at all (timeout, refused
 * connection) is a failure; any other answer a success; a client that went away tells nothing.
 */
function settleCircuit(ctx: RequestContext, circuit: CircuitBreaker): void {
  let settled = false;
  const settle = (outcome: 'succeeded' | 'failed' | 'released') => {
    if (settled) return;
    settled = true;
    circuit[outcome]();
  };
  ctx.res.once('finish', () => settle(ctx.res.statusCode >= 500 ? 'failed' : 'succeeded'));
  ctx.res.once('close', () => settle(ctx.res.writableFinished ? (ctx.res.statusCode >= 500 ? 'failed' : 'succeeded') : 'released'));
}

/** `Location` and `Content-Location` pointing at the backend become the same path under its public base. */
function rewriteLocations(headers: IncomingHttpHeaders, state: InFlight): void {
  for (const name of ['location', 'content-location'] as const) {
    const value = headers[name];
    if (typeof value !== 'string') continue;
    const absolute = URL.parse(value, state.target)?.href;
    if (absolute) headers[name] = state.rewrite(absolute);
  }
}

/**
 * The backend went (it answered early and closed, or reset) while the body was still arriving: the
 * rest is read and dropped, and a body that turns out over the limit is still the client's 413,
 * not the backend's 503 (found by the fuzz suite: a slow upload one byte over the limit got 503).
 */
function answerAfterBody(ctx: RequestContext, state: InFlight, maxBytes: number): void {
  let size = state.received;
  let answered = false;
  const answer = (): void => {
    if (answered) return;
    answered = true;
    ctx.req.off('data', onData);
    if (size > maxBytes) state.tooLarge = true;
    if (!ctx.res.headersSent) sendError(ctx.res, failure(state, maxBytes));
  };
  const onData = (chunk: Buffer): void => {
    size += chunk.length;
    if (size > maxBytes) answer();
  };
  ctx.req.unpipe();
  ctx.req.on('data', onData).once('end', answer).once('close', answer);
  ctx.req.resume();
}

/**
 * Reads the rest of the request body into nothing once the answer is decided, so the client's
 * upload is not cut off under it (RFC 9112 §9.6); a body going past `maxBytes` (counting the
 * `received` bytes already read) ends the connection instead. Once per request.
 */
function dropRestOfBody(req: IncomingMessage, received: number, maxBytes: number): void {
  if (dropping.has(req)) return;
  dropping.add(req);
  let size = received;
  req.unpipe();
  req.on('data', (chunk: Buffer) => {
    size += chunk.length;
    if (size > maxBytes) req.destroy();
  });
  req.resume();
}

/** Requests whose rest is being dropped. */
const dropping = new WeakSet<IncomingMessage>();

function failure(state: InFlight, maxBodyBytes: number): ProtoError {
  if (state.tooLarge) return tooLarge(maxBodyBytes);
  if (state.timedOut) return new ProtoError('BACKEND_TIMEOUT', 'the backend did not answer in time');
  if (state.reset) {
    return new ProtoError('BACKEND_UNAVAILABLE', 'the backend reset the connection before its answer arrived (an answer it wrote before the reset is lost with it)', { reason: 'connection-reset' });
  }
  return new ProtoError('BACKEND_UNAVAILABLE', 'the backend is unavailable');
}

/**
 * Socket errors of a backend that reset the connection. A backend that answers early and closes
 * with request bytes unread makes its own TCP stack send a reset (RFC 9112 §9.6), which discards
 * its answer on the gateway's side when it arrives before the answer was read: there is no answer
 * to forward, so it is 503 `BACKEND_UNAVAILABLE` (DESIGN: an unavailable dependency is a 503; the
 * catalogue has no 502), with `details.reason: connection-reset` to say what happened.
 */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE']);

function tooLarge(maxBytes: number): ProtoError {
  return new ProtoError('PAYLOAD_TOO_LARGE', `the request body is larger than ${maxBytes} bytes`, { limit: maxBytes });
}

/**
 * Passes a streamed body through until more than `maxBytes` went by; then calls `onExceeded` once and
 * ends the stream quietly. It never emits 'error': nothing listens on this stream (http-proxy-3 only
 * pipes it), so an error event here was an uncaught exception that ended the whole process
 * (regression test: test/http/passthrough-crash.test.ts). The refusal is the 413 of `failure()`.
 */
function limitBody(maxBytes: number, onRead: (size: number) => void, onExceeded: () => void): Transform {
  let size = 0;
  let exceeded = false;
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (exceeded) return done();
      size += chunk.length;
      onRead(size);
      if (size <= maxBytes) return done(null, chunk);
      exceeded = true;
      onExceeded();
      done();
    },
  });
}

/**
 * The backend URL for this request: the rest of the path after `/services/{id}/` exactly as the
 * client encoded it (dot segments were already resolved when the request was routed), under the
 * endpoint. An encoded `/` or `\` is refused: a backend that decodes it would see a different path
 * (`..%2f..%2fsecret` must not climb out of the endpoint).
 */
function targetUrl(endpoint: string, ctx: RequestContext, credentialQueryParam: string | undefined): string {
  const path = requestTarget(ctx.req.url ?? '/')?.pathname ?? '/';
  const rest = path.split('/').slice(3).join('/');
  if (/%(2f|5c)/i.test(rest)) throw new ProtoError('INVALID_PARAMETER', 'the path contains an encoded "/" or "\\"', { parameter: 'path' });
  const query = new URLSearchParams(ctx.query);
  if (credentialQueryParam) query.delete(credentialQueryParam);
  const search = query.size > 0 ? `?${query}` : '';
  const target = joinUrl(endpoint, rest) + search;
  if (!new URL(target).href.startsWith(endpoint)) throw new ProtoError('NOT_FOUND', `no resource at ${path}`);
  return target;
}

function stripHeaders(req: IncomingMessage, credentialHeaders: string[]): void {
  const listed = String(req.headers.connection ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
  // The caller's credentials, and identity headers only the gateway may set (backends/identity-headers.ts).
  for (const name of [...HOP_BY_HOP, ...listed, ...credentialHeaders, ...IDENTITY_HEADERS]) delete req.headers[name];
}
