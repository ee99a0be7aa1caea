/**
 * The SSE bridge over HTTP (PROTOCOL.md 4.3): `GET /events/stream` and the per-service view
 * `GET /services/{id}/events/stream`, with the filters `type`, `source` and `correlationId`
 * (combinable) and replay from the `Last-Event-ID` header or the `lastEventId` query parameter
 * (for a first connection, which cannot set the header from a browser's EventSource).
 *
 * Authentication and scopes are the HTTP core's, like every endpoint (`read`; the key may come in
 * `auth.queryParam`). The bridge owns the `sse` config section.
 */
import type { AccessRules } from '../../edge/access-rules.ts';
import type { Logger } from 'pino';
import type { BackendDirectory } from '../../backends/directory.ts';
import type { SseConfig } from '../../config/types.ts';
import type { EventFilter } from '../../log/EventLog.ts';
import type { SseMetrics } from '../../metrics/sse.ts';
import { text } from '../../http/params.ts';
import type { RequestContext, Route } from '../../http/route.ts';
import { SseHub } from './sse-hub.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { followAliases, type AliasSource } from '../live-tail/aliases.ts';
import type { QuotaPool } from '../../edge/quota.ts';

/** What the bridge is built from, at boot. */
export interface SseBridgeOptions {
  config: SseConfig;
  /** The stream pool of the admission path. */
  streams: QuotaPool;
  /** The live tail the streams subscribe to. */
  tail: LiveTail;
  backends: BackendDirectory;
  metrics: SseMetrics;
  logger: Logger;
  /** The backends' own ids of commands: a `correlationId` stream also matches them (the tail adds those learnt while it is open). */
  correlationAliases?: AliasSource;
  /** Per-caller catalogues: a stream carries only the events its caller sees (default: every event). */
  access?: Pick<AccessRules, 'eventsSeenBy'>;
}

/** The bridge: its hub (a component to start and close) and its routes. */
export interface SseBridge {
  hub: SseHub;
  routes: Route[];
}

/** Builds the hub and the two stream routes. */
export function sseBridge(options: SseBridgeOptions): SseBridge {
  const hub = new SseHub({ tail: options.tail, config: options.config, streams: options.streams, metrics: options.metrics, logger: options.logger });
  const stream = async (ctx: RequestContext, backend?: string): Promise<undefined> => {
    if (ctx.req.method === 'HEAD') return void headOnly(ctx);
    const { filter, aliasesFor } = await followAliases(streamFilter(ctx.query, backend), options.correlationAliases);
    hub.open({ res: ctx.res, principal: ctx.principal, filter, visible: options.access?.eventsSeenBy(ctx.principal), lastEventId: lastEventIdOf(ctx), aliasesFor });
    return undefined;
  };
  const service = (ctx: RequestContext): string => options.backends.require(ctx.params.id).id;
  return {
    hub,
    routes: [
      { method: 'GET', path: '/events/stream', operation: 'sse.subscribe', handle: (ctx) => stream(ctx) },
      { method: 'GET', path: '/services/:id/events/stream', operation: 'sse.subscribe', handle: (ctx) => stream(ctx, service(ctx)) },
    ],
  };
}

/** The filters of a stream request (PROTOCOL.md 4.3), plus the backend of a per-service stream. */
export function streamFilter(query: URLSearchParams, backend?: string): EventFilter {
  const filter: EventFilter = {};
  const type = text(query, 'type');
  const source = text(query, 'source');
  const correlationId = text(query, 'correlationId');
  if (type !== undefined) filter.type = type;
  if (source !== undefined) filter.source = source;
  if (correlationId !== undefined) filter.correlationId = correlationId;
  if (backend !== undefined) filter.backend = backend;
  return filter;
}

/** The id to resume after: the header a reconnecting EventSource sends wins over the query parameter. */
function lastEventIdOf(ctx: RequestContext): string | undefined {
  const header = ctx.req.headers['last-event-id'];
  if (typeof header === 'string' && header !== '') return header;
  return text(ctx.query, 'lastEventId');
}

/** HEAD: the stream's headers without opening a stream that would never end. */
function headOnly(ctx: RequestContext): void {
  ctx.res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' }).end();
}
