/**
 * Wiring of the query path (part of `app.ts`'s job, kept beside it so the feature wires in as one
 * block, like `command-path.ts`): the query catalogue, the backend adapters (legacy mappings
 * compiled once), the runner with its metrics, and the routes.
 */
import type { AccessRules } from './edge/access-rules.ts';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { BackendDirectory } from './backends/directory.ts';
import { LegacyQueries } from './backends/legacy-query.ts';
import { runProtoQuery } from './backends/proto-query.ts';
import { QueryCatalogue } from './catalogue/query-catalogue.ts';
import type { Route } from './http/route.ts';
import { queryRoutes } from './http/routes/queries.ts';
import { queryMetrics } from './metrics/queries.ts';
import { ProtoError } from './errors.ts';
import type { QueryExecutor } from './queries/query-call.ts';
import { QueryRunner } from './queries/query-runner.ts';

/** What the query path needs from the rest of the gateway. */
export interface QueryPathOptions {
  publicUrl: string;
  backends: BackendDirectory;
  /** Deadline of a backend's answer, in ms (`commands.dispatch.timeout`, as for the pass-through). */
  timeoutMs: number;
  /** The query parameter that may carry the caller's key (`auth.queryParam`). */
  credentialQueryParam?: string;
  /** Per-caller catalogues (`access`); absent = every caller sees every query. */
  access?: AccessRules;
  registry: Registry;
  logger: Logger;
}

/** The query path, built: its component (the catalogue) and its routes. */
export interface QueryPath {
  catalogue: QueryCatalogue;
  /** Runs queries (the routes and the MCP `execute_query` tool). */
  runner: QueryRunner;
  routes: Route[];
}

/** Builds the query path (nothing is read from backends before `catalogue.start()`). */
export function createQueryPath(options: QueryPathOptions): QueryPath {
  const { backends } = options;
  const catalogue = new QueryCatalogue({ publicUrl: options.publicUrl, backends, logger: options.logger });
  const legacy = new LegacyQueries(backends.legacy());
  backends.watch({
    added: (backend) => (backend.kind === 'legacy' ? legacy.install(backend) : undefined),
    replaced: (_previous, next) => (next.kind === 'legacy' ? legacy.install(next) : legacy.forget(next.id)),
    removed: (backend) => legacy.forget(backend.id),
  });
  const execute: QueryExecutor = async (call) => {
    const backend = backends.get(call.entry.backend);
    if (!backend) throw new ProtoError('BACKEND_UNAVAILABLE', `the backend of query ${call.entry.schema} is gone`);
    return backend.kind === 'proto' ? runProtoQuery(backend, call) : legacy.run(backend, call);
  };
  const runner = new QueryRunner({
    catalogue,
    circuitOf: (id) => backends.get(id)?.circuit,
    execute,
    timeoutMs: options.timeoutMs,
    credentialQueryParam: options.credentialQueryParam,
    metrics: queryMetrics(options.registry),
  });
  return { catalogue, runner, routes: queryRoutes({ catalogue, runner, backends, access: options.access }) };
}
