/**
 * The commands capability over HTTP (PROTOCOL-NOTES.md, Commands): the catalogue
 * (`GET /commands`), the schemas (`GET /commands/{schema}/{version}`, `application/schema+json`)
 * and the write path (`POST /commands`), at the root and scoped to one backend under
 * `/services/{id}/` (in front of the pass-through).
 */
import type { BackendDirectory } from '../../backends/directory.ts';
import type { CommandCatalogue, CommandEntry } from '../../catalogue/command-catalogue.ts';
import type { CommandIngestion } from '../../commands/ingestion.ts';
import type { AccessRules } from '../../edge/access-rules.ts';
import type { Reply, RequestContext, Route } from '../route.ts';

/** What the routes need. */
export interface CommandRoutesOptions {
  catalogue: CommandCatalogue;
  ingestion: CommandIngestion;
  backends: BackendDirectory;
  /** Per-caller catalogues (`access`); absent = every caller sees every command. */
  access?: AccessRules;
}

/** The routes of the commands capability. */
export function commandRoutes(options: CommandRoutesOptions): Route[] {
  const { catalogue, ingestion } = options;
  const scoped = (ctx: RequestContext): string => options.backends.require(ctx.params.id).id;
  const visible = (ctx: RequestContext) => (entry: CommandEntry): boolean => options.access?.command(ctx.principal, entry) ?? true;
  const list = (ctx: RequestContext, backendId?: string): Reply => ({ status: 200, body: { commands: catalogue.list(backendId, visible(ctx)) } });
  const schema = (ctx: RequestContext, backendId?: string): Reply => ({
    status: 200,
    body: catalogue.schemaDocument(ctx.params.schema, ctx.params.version, backendId, visible(ctx)),
    contentType: 'application/schema+json',
  });
  const submit = async (ctx: RequestContext, service?: string): Promise<Reply> => {
    const answer = await ingestion.submit({
      principal: ctx.principal.id,
      readBody: () => ctx.json(),
      traceparent: ctx.traceparent,
      caller: ctx.principal,
      ...(service !== undefined && { service }),
    });
    return { status: answer.status, body: answer.body };
  };
  return [
    { method: 'GET', path: '/commands', handle: (ctx) => list(ctx) },
    { method: 'GET', path: '/services/:id/commands', handle: (ctx) => list(ctx, scoped(ctx)) },
    { method: 'GET', path: '/commands/:schema/:version', handle: (ctx) => schema(ctx) },
    { method: 'GET', path: '/services/:id/commands/:schema/:version', handle: (ctx) => schema(ctx, scoped(ctx)) },
    { method: 'POST', path: '/commands', handle: (ctx) => submit(ctx) },
    { method: 'POST', path: '/services/:id/commands', handle: (ctx) => submit(ctx, scoped(ctx)) },
  ];
}
