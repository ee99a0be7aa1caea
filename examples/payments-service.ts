/**
 * A payments service that speaks the protocol: discovery manifest, command, event and query
 * catalogues, `POST /commands` with result events correlated by the command id, `GET /events`
 * with cursor pages and `GET /events/stream` (SSE with `Last-Event-ID` replay).
 *
 * Beside the protocol it serves paths a gateway passes through untouched (`/refunds`, `/docs/*`,
 * `/schemas/*`) and three test fixtures: `GET /slow?ms=N` (answers after N ms), `GET /echo-headers`
 * (the request headers as JSON) and `GET /sse-ticks?n=3&interval=100` (a finite SSE stream).
 *
 * Run it alone: `node examples/payments-service.ts --port 3002`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  agentCard,
  capabilitySchemas,
  commandList,
  commands,
  docs,
  eventCatalogue,
  eventDataschema,
  events as eventEntries,
  manifest,
  paymentStatusQuery,
  queryList,
  statusByEventType,
} from './payments-catalogue.ts';
import { acceptCommand, createCommandDesk, Refusal, resultOf, type CommandDesk } from './payments-commands.ts';
import { createEventLog, matches, type CloudEventLike, type EventFilter, type EventLog } from './payments-log.ts';
import { BodyError, closeOnSignal, closer, listen, optionFromArgv, portFromArgv, readJson, sendError, sendHtml, sendJson, serve } from './support/http-kit.ts';
import { openSse, type SseWriter } from './support/sse-writer.ts';

export type { CloudEventLike } from './payments-log.ts';

/** Options of `startPaymentsService`. */
export interface PaymentsServiceOptions {
  /** Port to listen on; 0 (the default) = any free port. */
  port?: number;
  /** Listen address; default `127.0.0.1`. */
  host?: string;
  /** The advertised `http.endpoint` when the listening address is not how others reach it (a container's `0.0.0.0`); default the listening URL plus `basePath`. */
  endpoint?: string;
  /** Path every route lives under, the path of `http.endpoint`; default `/`. */
  basePath?: string;
  /** Interval of SSE keepalive comments, in ms; default 15 000, 0 disables. */
  keepaliveMs?: number;
  /** Delay between accepting a command and emitting its result event, in ms; default 10. */
  resultDelayMs?: number;
}

/** A running payments service. */
export interface PaymentsService {
  /** Base URL of the listener, e.g. `http://127.0.0.1:3002` (no trailing `/`). */
  url: string;
  /** `url` + basePath: the service's `http.endpoint`, ending in `/`. */
  endpoint: string;
  /** Every event published so far, oldest first (the live log). */
  events: CloudEventLike[];
  /** Publishes a spontaneous event (or one correlated with `correlationid`) and returns it. */
  emit(type: string, data: object, correlationid?: string): CloudEventLike;
  /** Ends SSE streams, cancels pending results, stops listening; safe to call twice. */
  close(): Promise<void>;
}

/** Default and largest page of `GET /events`. */
const pageSize = { default: 50, max: 1000 };
/** Longest wait `GET /slow` accepts, in ms. */
const maxSlowMs = 60_000;

/** The service's state, shared by every handler. */
interface PaymentsState {
  /** Names this run of the service in its cursors. */
  instance: string;
  endpoint: string;
  log: EventLog;
  desk: CommandDesk;
  streams: Set<SseWriter>;
  timers: Set<NodeJS.Timeout>;
  keepaliveMs: number;
  resultDelayMs: number;
}

/** What a handler gets: the exchange and the path parameters. */
interface Exchange {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  params: Record<string, string>;
}

type RouteHandler = (state: PaymentsState, exchange: Exchange) => void | Promise<void>;

// ---- events ---------------------------------------------------------------------------------

/** Builds and appends an event; typed when its type is in the catalogue. */
function publish(state: PaymentsState, type: string, data: object, correlationid?: string): CloudEventLike {
  const entry = eventEntries.find((candidate) => candidate.type === type);
  const event: CloudEventLike = {
    specversion: '1.0',
    id: randomUUID(),
    source: state.endpoint,
    type,
    datacontenttype: 'application/json',
    ...(entry && { dataschema: eventDataschema(state.endpoint, entry.schema, entry.version) }),
    ...(correlationid !== undefined && { correlationid }),
    time: new Date().toISOString(),
    data: { ...data },
  };
  state.log.append(event);
  return event;
}

/**
 * The opaque `nextCursor` for log index `index`, and back. The log lives only while the service
 * runs, so a cursor names its instance: a restarted service refuses stale cursors instead of
 * silently reading from the wrong place.
 */
const cursor = {
  encode: (instance: string, index: number): string => Buffer.from(`${instance}:${index}`).toString('base64url'),
  decode(instance: string, text: string): number {
    const match = /^([0-9a-f]{8}):(\d+)$/.exec(Buffer.from(text, 'base64url').toString('utf8'));
    if (!match || match[1] !== instance) throw new Refusal(400, 'INVALID_CURSOR', 'after is not a cursor this service issued');
    return Number(match[2]);
  },
};

/** An ISO time query parameter in epoch ms, or undefined when absent. */
function timeParam(url: URL, name: string): number | undefined {
  const text = url.searchParams.get(name);
  if (text === null) return undefined;
  const time = Date.parse(text);
  if (Number.isNaN(time)) throw new Refusal(400, 'INVALID_PARAMETER', `${name} must be an ISO 8601 time`);
  return time;
}

/** `limit` (default 50, capped at 1000); not a positive integer is a 400. */
function limitParam(url: URL): number {
  const text = url.searchParams.get('limit');
  if (text === null) return pageSize.default;
  if (!/^\d+$/.test(text) || Number(text) < 1) throw new Refusal(400, 'INVALID_PARAMETER', 'limit must be a positive integer');
  return Math.min(Number(text), pageSize.max);
}

/** The filters common to `GET /events` and the stream. */
function streamFilter(url: URL): EventFilter {
  const filter: EventFilter = {};
  for (const key of ['type', 'correlationId', 'source'] as const) {
    const value = url.searchParams.get(key);
    if (value !== null) filter[key] = value;
  }
  return filter;
}

function listEvents(state: PaymentsState, { res, url }: Exchange): void {
  const filter: EventFilter = { ...streamFilter(url), from: timeParam(url, 'from'), to: timeParam(url, 'to') };
  const after = url.searchParams.get('after');
  const page = state.log.page(filter, after === null ? 0 : cursor.decode(state.instance, after), limitParam(url));
  sendJson(res, 200, page.next === undefined ? { events: page.events } : { events: page.events, nextCursor: cursor.encode(state.instance, page.next) });
}

function streamEvents(state: PaymentsState, { req, res, url }: Exchange): void {
  const filter = streamFilter(url);
  let unlisten = (): void => {};
  const sse = openSse(res, {
    keepaliveMs: state.keepaliveMs,
    onClose: () => {
      unlisten();
      state.streams.delete(sse);
    },
  });
  state.streams.add(sse);
  const send = (event: CloudEventLike): void => sse.send(JSON.stringify(event), event.id);
  // Reconnection replays what came after the last event the client saw (PROTOCOL.md 4.3, rule 4).
  const lastEventId = req.headers['last-event-id'];
  if (typeof lastEventId === 'string') state.log.after(lastEventId, filter).forEach(send);
  if (sse.closed) return;
  unlisten = state.log.listen((event) => {
    if (matches(event, filter)) send(event);
  });
}

function eventSchema(_state: PaymentsState, { res, params }: Exchange): void {
  const entry = eventEntries.find((candidate) => candidate.schema === params.schema && candidate.version === params.version);
  if (!entry) throw new Refusal(404, 'UNKNOWN_SCHEMA', `no event schema ${params.schema}/${params.version}`);
  sendJson(res, 200, { title: entry.type, description: entry.description, ...entry.jsonSchema }, 'application/schema+json');
}

// ---- commands -------------------------------------------------------------------------------

/** Runs `task` after `ms`, unless the service closes first. */
function later(state: PaymentsState, ms: number, task: () => void): void {
  const timer = setTimeout(() => {
    state.timers.delete(timer);
    task();
  }, ms);
  state.timers.add(timer);
}

async function submitCommand(state: PaymentsState, { req, res }: Exchange): Promise<void> {
  const { command, repeat } = acceptCommand(state.desk, await readJson(req));
  // A repeated command is answered as the first time, without processing it again.
  if (!repeat) {
    const result = resultOf(command);
    later(state, state.resultDelayMs, () => publish(state, result.type, result.data, command.id));
  }
  sendJson(res, 201, { id: command.id });
}

function commandSchema(_state: PaymentsState, { res, params }: Exchange): void {
  const entry = commands.find((candidate) => candidate.schema === params.schema && candidate.version === params.version);
  if (!entry) throw new Refusal(404, 'UNKNOWN_SCHEMA', `no command schema ${params.schema}/${params.version}`);
  sendJson(res, 200, { title: entry.type, description: entry.description, ...entry.jsonSchema, produces: entry.produces }, 'application/schema+json');
}

// ---- queries --------------------------------------------------------------------------------

/** The payment status of an order: what its latest payment event says. */
function paymentStatus(log: EventLog, orderId: string): string {
  for (let index = log.events.length - 1; index >= 0; index--) {
    const event = log.events[index];
    if (event.data.orderId === orderId && statusByEventType[event.type]) return statusByEventType[event.type];
  }
  return 'unknown';
}

function querySchema(_state: PaymentsState, { res, params }: Exchange): void {
  if (params.schema !== paymentStatusQuery.schema || params.version !== paymentStatusQuery.version) {
    throw new Refusal(404, 'UNKNOWN_SCHEMA', `no query ${params.schema}/${params.version}`);
  }
  const { description, parameters, response } = paymentStatusQuery;
  sendJson(res, 200, { description, parameters, response });
}

function runQuery(state: PaymentsState, { res, url, params }: Exchange): void {
  if (params.schema !== paymentStatusQuery.schema) throw new Refusal(404, 'UNKNOWN_SCHEMA', `no query ${params.schema}`);
  const orderId = url.searchParams.get('orderId');
  if (!orderId) throw new Refusal(400, 'INVALID_PARAMETER', 'orderId is required');
  sendJson(res, 200, { orderId, status: paymentStatus(state.log, orderId) });
}

// ---- pass-through targets and test fixtures ---------------------------------------------------

/** An integer query parameter within [min, max], or `fallback` when absent. */
function intParam(url: URL, name: string, fallback: number, min: number, max: number): number {
  const text = url.searchParams.get(name);
  if (text === null) return fallback;
  const value = Number(text);
  if (!Number.isInteger(value) || value < min || value > max) throw new Refusal(400, 'INVALID_PARAMETER', `${name} must be an integer in [${min}, ${max}]`);
  return value;
}

function slow(_state: PaymentsState, { res, url }: Exchange): void {
  const ms = intParam(url, 'ms', 1000, 0, maxSlowMs);
  const timer = setTimeout(() => sendJson(res, 200, { waitedMs: ms }), ms);
  res.on('close', () => clearTimeout(timer));
}

function sseTicks(state: PaymentsState, { res, url }: Exchange): void {
  const count = intParam(url, 'n', 3, 1, 1000);
  const interval = intParam(url, 'interval', 100, 0, maxSlowMs);
  let tick = 0;
  let timer: NodeJS.Timeout | undefined;
  const sse = openSse(res, {
    keepaliveMs: 0,
    onClose: () => {
      clearTimeout(timer);
      state.streams.delete(sse);
    },
  });
  // The first tick goes out at once, so a client can tell streaming from buffering.
  const next = (): void => {
    tick += 1;
    sse.send(JSON.stringify({ tick, time: new Date().toISOString() }), String(tick));
    if (tick < count) timer = setTimeout(next, interval);
    else sse.end();
  };
  state.streams.add(sse);
  next();
}

function document(_state: PaymentsState, { res, params }: Exchange): void {
  const page = docs[params.name];
  if (!page) throw new Refusal(404, 'NOT_FOUND', `no document ${params.name}`);
  sendHtml(res, page[0], page[1]);
}

function capabilitySchema(_state: PaymentsState, { res, params }: Exchange): void {
  const schema = capabilitySchemas[params.name];
  if (!schema) throw new Refusal(404, 'NOT_FOUND', `no schema ${params.name}`);
  sendJson(res, 200, schema, 'application/schema+json');
}

// ---- routing --------------------------------------------------------------------------------

/** Method, path pattern relative to the endpoint (`:name` captures a segment), handler. */
const routeTable: [string, string, RouteHandler][] = [
  ['GET', '.well-known/proto', (state, { res }) => sendJson(res, 200, manifest(state.endpoint))],
  ['GET', '.well-known/proto.json', (state, { res }) => sendJson(res, 200, manifest(state.endpoint))],
  ['GET', '.well-known/agent.json', (state, { res }) => sendJson(res, 200, agentCard(state.endpoint))],
  ['GET', 'docs/:name', document],
  ['GET', 'schemas/:name', capabilitySchema],
  ['GET', 'refunds', (_state, { res }) => sendJson(res, 200, { refunds: [] })],
  ['GET', 'commands', (state, { res }) => sendJson(res, 200, commandList(state.endpoint))],
  ['POST', 'commands', submitCommand],
  ['GET', 'commands/:schema/:version', commandSchema],
  ['GET', 'events', listEvents],
  ['GET', 'events/stream', streamEvents],
  ['GET', 'events/catalogue', (state, { res }) => sendJson(res, 200, eventCatalogue(state.endpoint))],
  ['GET', 'events/:schema/:version', eventSchema],
  ['GET', 'queries', (state, { res }) => sendJson(res, 200, queryList(state.endpoint))],
  ['GET', 'queries/:schema/:version', querySchema],
  ['GET', 'queries/:schema', runQuery],
  ['GET', 'slow', slow],
  ['GET', 'echo-headers', (_state, { req, res }) => sendJson(res, 200, req.headers)],
  ['GET', 'sse-ticks', sseTicks],
];

const routes = routeTable.map(([method, pattern, handle]) => ({ method, segments: pattern.split('/'), handle }));

/** A percent-decoded path segment; a malformed one is kept as sent (and matches nothing). */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** Path parameters when `segments` matches `parts`, else undefined. Literal segments win by table order. */
function matchPath(segments: string[], parts: string[]): Record<string, string> | undefined {
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  for (const [index, segment] of segments.entries()) {
    if (segment.startsWith(':')) params[segment.slice(1)] = parts[index];
    else if (segment !== parts[index]) return undefined;
  }
  return params;
}

/** Finds the route of a request and runs it; 404 / 405 otherwise, refusals as error bodies. */
async function dispatch(state: PaymentsState, basePath: string, req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
  if (!url.pathname.startsWith(basePath)) return sendError(res, 404, 'NOT_FOUND', `no route ${url.pathname}`);
  const parts = url.pathname.slice(basePath.length).split('/').filter(Boolean).map(decodeSegment);
  const candidates = routes.map((route) => ({ route, params: matchPath(route.segments, parts) })).filter((found) => found.params);
  const found = candidates.find(({ route }) => route.method === req.method);
  if (!found) return candidates.length ? sendError(res, 405, 'METHOD_NOT_ALLOWED', `${req.method} is not allowed here`) : sendError(res, 404, 'NOT_FOUND', `no route ${url.pathname}`);
  try {
    await found.route.handle(state, { req, res, url, params: found.params! });
  } catch (error) {
    if (error instanceof Refusal) return sendError(res, error.status, error.code, error.message, error.details);
    if (error instanceof BodyError) return sendError(res, error.status, error.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'INVALID_JSON', error.message);
    throw error;
  }
}

/** `/`, `api`, `/api/` → `/`, `/api/`, `/api/`. */
function normalizeBasePath(basePath: string): string {
  const trimmed = basePath.replace(/^\/+|\/+$/g, '');
  return trimmed ? `/${trimmed}/` : '/';
}

/** Starts the payments service with an empty log; resolves once it listens. */
export async function startPaymentsService(opts: PaymentsServiceOptions = {}): Promise<PaymentsService> {
  const basePath = normalizeBasePath(opts.basePath ?? '/');
  const state: PaymentsState = {
    instance: randomUUID().slice(0, 8),
    endpoint: '',
    log: createEventLog(),
    desk: createCommandDesk(),
    streams: new Set(),
    timers: new Set(),
    keepaliveMs: opts.keepaliveMs ?? 15_000,
    resultDelayMs: opts.resultDelayMs ?? 10,
  };
  const server = serve((req, res, url) => dispatch(state, basePath, req, res, url));
  const url = await listen(server, opts.port ?? 0, opts.host ?? '127.0.0.1');
  state.endpoint = opts.endpoint ?? `${url}${basePath}`;
  const close = closer(server, () => {
    for (const timer of state.timers) clearTimeout(timer);
    for (const stream of state.streams) stream.end();
  });
  return {
    url,
    endpoint: state.endpoint,
    events: state.log.events,
    emit: (type, data, correlationid) => publish(state, type, data, correlationid),
    close,
  };
}

if (import.meta.main) {
  const service = await startPaymentsService({
    port: portFromArgv(process.argv, 3002),
    host: optionFromArgv(process.argv, 'host', '127.0.0.1'),
    endpoint: process.argv.some((arg) => arg.startsWith('--endpoint')) ? optionFromArgv(process.argv, 'endpoint', '') : undefined,
  });
  console.log(`payments service (protocol) listening on ${service.url}; manifest at ${service.endpoint}.well-known/proto`);
  closeOnSignal(service.close);
}
