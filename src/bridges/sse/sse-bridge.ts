/**
 * The SSE bridge over HTTP (PROTOCOL.md 4.3): `GET /events/stream` and the per-service view
 * `GET /services/{id}/events/stream`, with the filters `type`, `source` and `correlationId`
 * (combinable) and replay from the `Last-Event-ID` header or the `lastEventId` query parameter
 * (for a first connection, which cannot set the header from a browser's EventSource).
 *
 * Authentication and scopes are the HTTP core's, like every endpoint (`read`; the key may come in
 * `auth.queryParam`). The bridge owns the `sse` config section.
 */
import type { Logger } from 'pino';
import type { BackendDirectory } from '../../backends/directory.ts';
import type { SseConfig } from '../../config/types.ts';
import type { EventFilter } from '../../log/EventLog.ts';
import type { SseMetrics } from '../../metrics/sse.ts';
import { text } from '../../http/params.ts';
import type { RequestContext, Route } from '../../http/route.ts';
import { SseHub, type StreamSource } from './sse-hub.ts';
import { ANONYMOUS } from '../../http/auth.ts';

/** What the bridge is built from, at boot. */
export interface SseBridgeOptions {
  config: SseConfig;
  source: StreamSource;
  backends: BackendDirectory;
  metrics: SseMetrics;
  logger: Logger;
  /** The backends' own ids of commands: a `correlationId` stream also matches them (and those learnt while it is open). */
  correlationAliases?: { aliasesOf(id: string): Promise<string[]>; watch(watcher: (id: string, alias: string) => void): () => void };
}

/** The bridge: its hub (a component to start and close) and its routes. */
export interface SseBridge {
  hub: SseHub;
  routes: Route[];
}

/** Builds the hub and the two stream routes. */
export function sseBridge(options: SseBridgeOptions): SseBridge {
  const hub = new SseHub({ source: options.source, config: options.config, metrics: options.metrics, logger: options.logger });
  const aliases = options.correlationAliases;
  aliases?.watch((id, alias) => hub.addAlias(id, alias));
  const stream = async (ctx: RequestContext, backend?: string): Promise<undefined> => {
    if (ctx.req.method === 'HEAD') return void headOnly(ctx);
    let filter = streamFilter(ctx.query, backend);
    const aliasesFor = aliases ? filter.correlationId : undefined;
    if (aliasesFor !== undefined) filter = await withAliases(filter, aliasesFor, aliases!);
    hub.open({ res: ctx.res, principal: ctx.principal === ANONYMOUS ? undefined : ctx.principal.id, filter, lastEventId: lastEventIdOf(ctx), aliasesFor });
    return undefined;
  };
  const service = (ctx: RequestContext): string => options.backends.require(ctx.params.id).id;
  return {
    hub,
    routes: [
      { method: 'GET', path: '/events/stream', handle: (ctx) => stream(ctx) },
      { method: 'GET', path: '/services/:id/events/stream', handle: (ctx) => stream(ctx, service(ctx)) },
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

/** The filter with `correlationId` widened to the command's aliases known now (the hub adds later ones). */
async function withAliases(filter: EventFilter, id: string, aliases: { aliasesOf(id: string): Promise<string[]> }): Promise<EventFilter> {
  const { correlationId: _id, ...rest } = filter;
  const known = (await aliases.aliasesOf(id)).filter((alias) => alias !== id);
  return { ...rest, correlationIds: [id, ...known] };
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
