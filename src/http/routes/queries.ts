/**
 * The queries capability over HTTP (PROTOCOL-NOTES.md, Queries): the catalogue (`GET /queries`),
 * the query documents (`GET /queries/{schema}/{version}`) and execution (`GET /queries/{schema}?…`),
 * at the root and scoped to one backend under `/services/{id}/` (in front of the pass-through).
 * `/queries/:schema` and `/queries/:schema/:version` are distinct patterns for the router.
 */
import type { BackendDirectory } from '../../backends/directory.ts';
import type { QueryCatalogue, QueryEntry } from '../../catalogue/query-catalogue.ts';
import type { AccessRules } from '../../edge/access-rules.ts';
import type { QueryRunner } from '../../queries/query-runner.ts';
import { forwardedCaller } from '../../edge/forwarded-caller.ts';
import type { Reply, RequestContext, Route } from '../route.ts';

/** What the routes need. */
export interface QueryRoutesOptions {
  catalogue: QueryCatalogue;
  runner: QueryRunner;
  backends: BackendDirectory;
  /** Per-caller catalogues (`access`); absent = every caller sees every query. */
  access?: AccessRules;
}

/** The routes of the queries capability. */
export function queryRoutes(options: QueryRoutesOptions): Route[] {
  const { catalogue, runner } = options;
  const scoped = (ctx: RequestContext): string => options.backends.require(ctx.params.id).id;
  const visible = (ctx: RequestContext) => (entry: QueryEntry): boolean => options.access?.query(ctx.principal, entry) ?? true;
  const list = (ctx: RequestContext, backendId?: string): Reply => ({ status: 200, body: { queries: catalogue.list(backendId, visible(ctx)) } });
  const document = (ctx: RequestContext, backendId?: string): Reply => ({ status: 200, body: catalogue.document(ctx.params.schema, ctx.params.version, backendId, visible(ctx)) });
  const run = async (ctx: RequestContext, backendId?: string): Promise<Reply> => {
    const result = await runner.run({ schema: ctx.params.schema, query: ctx.query, traceparent: ctx.traceparent, caller: forwardedCaller(ctx.principal), visible: visible(ctx), ...(backendId !== undefined && { backendId }) });
    return { status: result.status, body: result.body ?? null, ...(result.headers && { headers: result.headers }) };
  };
  return [
    { method: 'GET', path: '/queries', handle: (ctx) => list(ctx) },
    { method: 'GET', path: '/services/:id/queries', handle: (ctx) => list(ctx, scoped(ctx)) },
    { method: 'GET', path: '/queries/:schema/:version', handle: (ctx) => document(ctx) },
    { method: 'GET', path: '/services/:id/queries/:schema/:version', handle: (ctx) => document(ctx, scoped(ctx)) },
    { method: 'GET', path: '/queries/:schema', handle: (ctx) => run(ctx) },
    { method: 'GET', path: '/services/:id/queries/:schema', handle: (ctx) => run(ctx, scoped(ctx)) },
  ];
}
