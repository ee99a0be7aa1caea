/**
 * The event log over HTTP: `GET /events` (PROTOCOL.md 4.2), the event-type catalogue
 * (`GET /events/catalogue`) and schemas (`GET /events/{schema}/{version}`, PROTOCOL.md 4.4), at the
 * root and scoped to one backend under `/services/{id}/`.
 */
import type { BackendDirectory } from '../../backends/directory.ts';
import type { EventCatalogue } from '../../catalogue/event-catalogue.ts';
import type { EventsConfig } from '../../config/types.ts';
import type { AccessRules, EventVisibility } from '../../edge/access-rules.ts';
import type { EventFilter, EventLog } from '../../log/EventLog.ts';
import { readHistory, type EventList } from '../../log/history.ts';
import { isoTime, positiveInteger, text } from '../params.ts';
import type { RequestContext, Route } from '../route.ts';

export interface EventRoutesOptions {
  log: EventLog;
  catalogue: EventCatalogue;
  backends: BackendDirectory;
  events: EventsConfig;
  /** Per-caller catalogues (`access`): a hidden event type (of a hidden backend or command) is neither listed nor described. */
  access?: AccessRules;
  /** The ids a backend answered a command with, so `correlationId=<command id>` finds its events too (optional). */
  correlationAliases?: { aliasesOf(id: string): Promise<string[]> };
}

/** The routes of the events capability. */
export function eventRoutes(options: EventRoutesOptions): Route[] {
  const history = async (ctx: RequestContext, backend?: string) => ({ status: 200, body: await readEventPage(options, ctx.query, backend, options.access?.eventsSeenBy(ctx.principal)) });
  const scoped = (ctx: RequestContext): string => options.backends.require(ctx.params.id).id;
  const visible = (ctx: RequestContext) => (known: { type: string; backend: string }): boolean => options.access?.event(ctx.principal, known) ?? true;
  const schema = async (ctx: RequestContext, backend?: string) => ({
    status: 200,
    body: await options.catalogue.schema(ctx.params.schema, ctx.params.version, backend, visible(ctx)),
    contentType: 'application/schema+json',
  });
  return [
    { method: 'GET', path: '/events', handle: (ctx) => history(ctx) },
    { method: 'GET', path: '/services/:id/events', handle: (ctx) => history(ctx, scoped(ctx)) },
    { method: 'GET', path: '/events/catalogue', handle: (ctx) => ({ status: 200, body: { events: options.catalogue.entries(undefined, visible(ctx)) } }) },
    {
      method: 'GET',
      path: '/services/:id/events/catalogue',
      handle: (ctx) => ({ status: 200, body: { events: options.catalogue.entries(scoped(ctx), visible(ctx)) } }),
    },
    { method: 'GET', path: '/events/:schema/:version', handle: (ctx) => schema(ctx) },
    { method: 'GET', path: '/services/:id/events/:schema/:version', handle: (ctx) => schema(ctx, scoped(ctx)) },
  ];
}

/**
 * One page of `GET /events` for its query parameters (type, correlationId, source, from, to,
 * limit, after), optionally scoped to a backend, of the events the caller sees (`visible`; default
 * every one); throws 400 `INVALID_PARAMETER`/`INVALID_CURSOR`. Shared by the route and the MCP
 * `get_events` tool.
 */
export async function readEventPage(
  options: Pick<EventRoutesOptions, 'log' | 'events' | 'correlationAliases'>,
  query: URLSearchParams,
  backend?: string,
  visible?: EventVisibility,
): Promise<EventList> {
  const filter = filterOf(query, backend);
  const limit = positiveInteger(query, 'limit', options.events.pageSize.default);
  const after = text(query, 'after');
  const correlationAliases = filter.correlationId === undefined ? undefined : await options.correlationAliases?.aliasesOf(filter.correlationId);
  return readHistory(options.log, options.events.pageSize, { filter, limit, after, correlationAliases, visible });
}

/** The log filter of `GET /events` and stream query parameters. */
export function filterOf(query: URLSearchParams, backend: string | undefined): EventFilter {
  const filter: EventFilter = {};
  const type = text(query, 'type');
  const source = text(query, 'source');
  const correlationId = text(query, 'correlationId');
  const fromMs = isoTime(query, 'from');
  const toMs = isoTime(query, 'to');
  if (type !== undefined) filter.type = type;
  if (source !== undefined) filter.source = source;
  if (correlationId !== undefined) filter.correlationId = correlationId;
  if (backend !== undefined) filter.backend = backend;
  if (fromMs !== undefined) filter.fromMs = fromMs;
  if (toMs !== undefined) filter.toMs = toMs;
  return filter;
}
