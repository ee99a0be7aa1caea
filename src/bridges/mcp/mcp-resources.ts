/**
 * The gateway's documents as MCP resources, read from the same catalogues and manifest as the
 * tools: the manifest, the command, query and event catalogues, each command/query/event schema
 * (listed, and as the templates `proto-gateway://{kind}/{schema}/{version}`), and the event log of
 * one correlation id (`proto-gateway://events?correlationId={id}`: subscribable; its events are then
 * pushed as `notifications/resources/updated` with the event, next to `notifications/proto/event`)
 * and of the caller's own commands (`proto-gateway://events/mine`, for `subscriptions/listen`).
 * Every document is JSON (`application/json`). An unknown URI is the SDK's resource-not-found error.
 * Per-caller catalogues: a caller is listed and reads only what its `view` shows (a hidden schema is
 * not found, as an unknown one).
 */
import { ResourceNotFoundError } from '@modelcontextprotocol/server';
import type { CallerView } from '../../edge/access-rules.ts';
import { isProtoError } from '../../errors.ts';
import type { ToolSurface } from './mcp-tools.ts';

/** The URI scheme of the gateway's resources. */
export const RESOURCE_SCHEME = 'proto-gateway://';
/** The resource a listen stream names to receive the events of the caller's own commands. */
export const MY_EVENTS_URI = 'proto-gateway://events/mine';
/** The resource of one correlation id's events. */
export const CORRELATION_URI_PREFIX = 'proto-gateway://events?correlationId=';

/** The resource of `correlationId`'s events. */
export function correlationUri(correlationId: string): string {
  return `${CORRELATION_URI_PREFIX}${encodeURIComponent(correlationId)}`;
}

/** The correlation id of a correlation resource URI, or undefined. */
export function correlationOf(uri: string): string | undefined {
  if (!uri.startsWith(CORRELATION_URI_PREFIX)) return undefined;
  const id = decodeURIComponent(uri.slice(CORRELATION_URI_PREFIX.length));
  return id === '' ? undefined : id;
}

/** One listed resource. */
export interface ResourceEntry {
  uri: string;
  name: string;
  description?: string;
  mimeType: 'application/json';
}

const JSON_TYPE = 'application/json' as const;

/** The templates `resources/templates/list` answers. */
export const RESOURCE_TEMPLATES = [
  { uriTemplate: `${RESOURCE_SCHEME}commands/{schema}/{version}`, name: 'command-schema', description: 'The JSON Schema document of one command', mimeType: JSON_TYPE },
  { uriTemplate: `${RESOURCE_SCHEME}queries/{schema}/{version}`, name: 'query-document', description: 'One query: its parameters and response', mimeType: JSON_TYPE },
  { uriTemplate: `${RESOURCE_SCHEME}events/{schema}/{version}`, name: 'event-schema', description: 'The JSON Schema of a typed event', mimeType: JSON_TYPE },
  { uriTemplate: `${CORRELATION_URI_PREFIX}{correlationId}`, name: 'correlated-events', description: 'The events of one correlation id (subscribable)', mimeType: JSON_TYPE },
];

/** The fixed resources, then one per command, query and event schema the caller sees. */
export function listResources(surface: Pick<ToolSurface, 'commands' | 'queries' | 'events'>, view: CallerView): ResourceEntry[] {
  const fixed: ResourceEntry[] = [
    { uri: `${RESOURCE_SCHEME}manifest`, name: 'manifest', description: 'The discovery manifest (/.well-known/proto)', mimeType: JSON_TYPE },
    { uri: `${RESOURCE_SCHEME}commands`, name: 'command-catalogue', description: 'The commands the services accept', mimeType: JSON_TYPE },
    { uri: `${RESOURCE_SCHEME}queries`, name: 'query-catalogue', description: 'The queries the services answer', mimeType: JSON_TYPE },
    { uri: `${RESOURCE_SCHEME}events`, name: 'event-catalogue', description: 'The event types the log holds', mimeType: JSON_TYPE },
  ];
  const item = (kind: string, schema: string, version: string): ResourceEntry => ({ uri: `${RESOURCE_SCHEME}${kind}/${schema}/${version}`, name: `${kind}/${schema}/${version}`, mimeType: JSON_TYPE });
  return [
    ...fixed,
    ...surface.commands.catalogue.list(undefined, view.command).map((c) => item('commands', c.schema, c.version)),
    ...surface.queries.catalogue.list(undefined, view.query).map((q) => item('queries', q.schema, q.version)),
    ...surface.events.catalogue.entries(undefined, view.event).map((e) => item('events', e.schema, e.version)),
  ];
}

/** Reads one resource as its JSON document. */
export async function readResource(surface: Pick<ToolSurface, 'commands' | 'queries' | 'events' | 'manifest'>, uri: string, view: CallerView): Promise<{ contents: Array<{ uri: string; mimeType: string; text: string }> }> {
  const document = await documentOf(surface, uri, view).catch((err: unknown) => {
    if (isProtoError(err)) throw new ResourceNotFoundError(uri);
    throw err;
  });
  if (document === undefined) throw new ResourceNotFoundError(uri);
  return { contents: [{ uri, mimeType: JSON_TYPE, text: JSON.stringify(document) }] };
}

async function documentOf(surface: Pick<ToolSurface, 'commands' | 'queries' | 'events' | 'manifest'>, uri: string, view: CallerView): Promise<unknown> {
  const correlationId = correlationOf(uri);
  if (correlationId !== undefined) return surface.events.page(new URLSearchParams({ correlationId }), view.log);
  if (!uri.startsWith(RESOURCE_SCHEME)) return undefined;
  const [kind, schema, version, ...rest] = uri.slice(RESOURCE_SCHEME.length).split('/').map(decodeURIComponent);
  if (rest.length > 0) return undefined;
  if (schema === undefined) {
    if (kind === 'manifest') return surface.manifest.current();
    if (kind === 'commands') return { commands: surface.commands.catalogue.list(undefined, view.command) };
    if (kind === 'queries') return { queries: surface.queries.catalogue.list(undefined, view.query) };
    if (kind === 'events') return { events: surface.events.catalogue.entries(undefined, view.event) };
    return undefined;
  }
  if (version === undefined) return undefined;
  if (kind === 'commands') return surface.commands.catalogue.schemaDocument(schema, version, undefined, view.command);
  if (kind === 'queries') return surface.queries.catalogue.document(schema, version, undefined, view.query);
  if (kind === 'events') return surface.events.catalogue.schema(schema, version, undefined, view.event);
  return undefined;
}
