/**
 * The gateway's spans, written against `@opentelemetry/api` only: the SDK and the exporter are wired
 * at start-up by `otlp-tracing.ts`, and nothing else imports them. Without that wiring every call
 * here is the API's no-op: a span is a `NonRecordingSpan` with an invalid context, no attribute or
 * link is built (each is passed as a callback, called only for a recording span), no context is
 * entered and no `traceparent` is made.
 *
 * Attributes follow the OpenTelemetry semantic conventions (HTTP, RPC, messaging with
 * `messaging.system: proto-gateway`); the gateway's own are under `proto.`. None carries a
 * credential, a token, a query string or a payload.
 */
import {
  context,
  isSpanContextValid,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
  type SpanContext,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

export { SpanKind, SpanStatusCode, type Attributes, type Span };

/** The instrumentation scope of every span of the gateway. */
export const TRACER_NAME = 'proto-gateway';

/** The tracer of the registered provider, and that provider (a provider registered again, as tests do, gets a new tracer). */
let cached: { provider: TracerProvider; tracer: Tracer } | undefined;

/** The API's tracer: a no-op until a provider is registered (`otlp-tracing.ts`), the SDK's after. */
function tracer(): Tracer {
  const provider = trace.getTracerProvider();
  if (cached?.provider !== provider) cached = { provider, tracer: provider.getTracer(TRACER_NAME) };
  return cached.tracer;
}

/** `messaging.system` of every messaging span (the gateway is the broker). */
export const MESSAGING_SYSTEM = 'proto-gateway';

/** Links a span carries at most (a batch of ingested events links to each event's trace up to this many). */
export const MAX_LINKS = 32;

/** How a span starts. */
export interface SpanStart {
  kind: SpanKind;
  /** A new trace (no parent), e.g. a dispatch attempt that runs after its accept. */
  root?: boolean;
  /** The parent; default the active context. */
  parent?: Context;
  /** Built only when the span records. */
  attributes?: () => Attributes;
  /** Built only when the span records. */
  links?: () => Link[];
}

/**
 * Starts a span; attributes and links are computed only when it records, and so is a name given as
 * a function (the span starts as `proto-gateway` and is renamed).
 */
export function startSpan(name: string | (() => string), start: SpanStart): Span {
  const span = tracer().startSpan(typeof name === 'string' ? name : TRACER_NAME, { kind: start.kind, root: start.root === true }, start.parent ?? context.active());
  if (span.isRecording()) {
    if (typeof name !== 'string') span.updateName(name());
    if (start.attributes) span.setAttributes(start.attributes());
    if (start.links) span.addLinks(start.links());
  }
  return span;
}

/** True when the span belongs to a trace (tracing is on), sampled or not. */
export function isTraced(span: Span): boolean {
  return isSpanContextValid(span.spanContext());
}

/** Runs `fn` with `span` as the active span (a no-op when tracing is off). */
export function withSpan<T>(span: Span, fn: () => T): T {
  if (!isTraced(span)) return fn();
  return context.with(trace.setSpan(context.active(), span), fn);
}

/**
 * Runs `fn` under `span` and ends the span when it settles; a throw sets the error status (with the
 * error's class, never its message, which may carry backend detail).
 */
export function inSpan<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  return isTraced(span) ? runInSpan(span, fn) : fn();
}

async function runInSpan<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  try {
    return await withSpan(span, fn);
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Marks a span as failed with the error's catalogue code or class (`error.type`). */
export function failSpan(span: Span, err: unknown): void {
  if (!span.isRecording()) return;
  const code = (err as { code?: unknown } | undefined)?.code;
  const type = typeof code === 'string' ? code : ((err as Error | undefined)?.name ?? 'Error');
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** Sets attributes built by `attributes` when the span records. */
export function annotate(span: Span, attributes: () => Attributes): void {
  if (span.isRecording()) span.setAttributes(attributes());
}

/** The W3C `traceparent` of a span (https://www.w3.org/TR/trace-context/#traceparent-header), undefined when tracing is off. */
export function traceparentOf(span: Span): string | undefined {
  const ctx = span.spanContext();
  if (!isSpanContextValid(ctx)) return undefined;
  return `00-${ctx.traceId}-${ctx.spanId}-${(ctx.traceFlags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The W3C `tracestate` of a span, undefined when it has none. */
export function tracestateOf(span: Span): string | undefined {
  const state = span.spanContext().traceState?.serialize();
  return state ? state : undefined;
}

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The span context a `traceparent` names (version 00), undefined when it is absent or malformed. */
export function spanContextOf(traceparent: unknown): SpanContext | undefined {
  if (typeof traceparent !== 'string') return undefined;
  const match = TRACEPARENT.exec(traceparent.trim().toLowerCase());
  if (!match) return undefined;
  const ctx = { traceId: match[1]!, spanId: match[2]!, traceFlags: Number.parseInt(match[3]!, 16), isRemote: true };
  return isSpanContextValid(ctx) ? ctx : undefined;
}

/** A link to the span a `traceparent` names (none when it is absent or malformed). */
export function linksTo(...traceparents: unknown[]): Link[] {
  const links: Link[] = [];
  for (const traceparent of traceparents) {
    const ctx = spanContextOf(traceparent);
    if (ctx && links.length < MAX_LINKS) links.push({ context: ctx });
  }
  return links;
}

/** The context of an incoming request's W3C headers (`traceparent`, `tracestate`); the root context when tracing is off. */
export function extractContext(headers: Record<string, unknown>): Context {
  return propagation.extract(ROOT_CONTEXT, headers);
}

/** The attributes every messaging span of the gateway shares. */
export function messagingAttributes(operationType: 'send' | 'receive' | 'process' | 'create', operationName: string, destination: string): Attributes {
  return {
    'messaging.system': MESSAGING_SYSTEM,
    'messaging.operation.type': operationType,
    // The name older conventions (and many back ends) still read.
    'messaging.operation': operationType,
    'messaging.operation.name': operationName,
    'messaging.destination.name': destination,
  };
}

/**
 * A URL as a span may carry it (`url.full`): no user info and no query string, which may hold a
 * credential (`api_key`); undefined when it does not parse.
 */
export function safeUrl(raw: string): string | undefined {
  const url = URL.parse(raw);
  if (!url) return undefined;
  url.username = '';
  url.password = '';
  url.search = '';
  url.hash = '';
  return url.toString();
}

/** `server.address` and `server.port` of a URL. */
export function serverAttributes(raw: string): Attributes {
  const url = URL.parse(raw);
  if (!url) return {};
  const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
  return { 'server.address': url.hostname, 'server.port': port };
}

/** What a delivery span says about the event it delivers. */
export interface DeliveredEvent {
  id: string;
  type: string;
  /** The event's `traceparent` extension, when it has one: the span links to it. */
  traceparent?: unknown;
}

/**
 * Starts the span of one delivery of an event (`deliver {transport}`, a messaging `send`): a trace
 * of its own, linked to the event's trace. `destination` names the consumer (subscription id,
 * stream), `event` and `attributes` are read only when the span records.
 */
export function startDeliverySpan(transport: string, destination: string, event: () => DeliveredEvent, attributes?: () => Attributes): Span {
  return startSpan(() => `deliver ${transport}`, {
    kind: SpanKind.PRODUCER,
    root: true,
    links: () => linksTo(event().traceparent),
    attributes: () => {
      const delivered = event();
      return {
        ...messagingAttributes('send', 'deliver', destination),
        'messaging.message.id': delivered.id,
        'proto.event.id': delivered.id,
        'proto.event.type': delivered.type,
        'proto.delivery.transport': transport,
        ...attributes?.(),
      };
    },
  });
}

/**
 * Runs one HTTP delivery attempt (a webhook, an A2A push notification) in `span`: `post` is given
 * the span's `traceparent` to send, so the receiver continues the delivery's trace (undefined when
 * tracing is off); the answer's status, or the failure, is recorded and the span ended.
 */
export function tracedAttempt<R extends { status?: number }>(span: Span, post: (traceparent: string | undefined) => Promise<R>): Promise<R> {
  const traceparent = traceparentOf(span);
  if (traceparent === undefined) return post(undefined);
  return post(traceparent).then(
    (response) => {
      annotate(span, () => ({
        ...(response.status !== undefined && { 'http.response.status_code': response.status }),
        ...((response.status === undefined || response.status >= 400) && { 'error.type': response.status === undefined ? 'unreachable' : String(response.status) }),
      }));
      span.end();
      return response;
    },
    (err: unknown) => {
      failSpan(span, err);
      span.end();
      throw err;
    },
  );
}

/** Records one delivery of `event` on a stream (SSE, gRPC, MCP, A2A): a span started and ended at the write. */
export function recordDelivery(transport: string, destination: string, event: DeliveredEvent): void {
  startDeliverySpan(transport, destination, () => event).end();
}

/**
 * Starts the server span of an inbound RPC (`{service}/{method}`, RPC conventions): gRPC calls, A2A
 * JSON-RPC messages, MCP tool calls. Its parent is the W3C context in `carrier` (gRPC metadata,
 * HTTP headers), else the active context (the HTTP request span the call came in on).
 */
export function startRpcServerSpan(system: 'grpc' | 'jsonrpc', service: string, method: string, carrier?: Record<string, unknown>, attributes?: () => Attributes): Span {
  const parent = carrier === undefined ? context.active() : propagation.extract(context.active(), carrier);
  return startSpan(() => `${service}/${method}`, {
    kind: SpanKind.SERVER,
    parent,
    attributes: () => ({ 'rpc.system': system, 'rpc.service': service, 'rpc.method': method, ...attributes?.() }),
  });
}

/** The `traceparent` of the active span, undefined when there is none (tracing off). */
export function activeTraceparent(): string | undefined {
  const span = trace.getActiveSpan();
  return span === undefined ? undefined : traceparentOf(span);
}
