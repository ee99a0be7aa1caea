/**
 * Queries of legacy backends, mapped by their configuration (DESIGN.md, `queries[]`): the request
 * `method` to the `path` template and the `query` expression's object as the query string (both
 * over `{ params }`; placeholder values URL-encoded; no `query` = no query string), the backend's
 * headers and the trace context;
 * a 2xx answer goes through the `result` expression over `{ response, status }` (default: the body).
 * Every mapping is compiled once, at boot or when a reload changes its backend.
 *
 * A path that the parameters cannot fill is the caller's problem (400 `INVALID_PARAMETER`); a
 * result expression that fails on the backend's answer is the backend's (503 `BACKEND_UNAVAILABLE`).
 */
import { identityHeaders } from './identity-headers.ts';
import type { LegacyQueryConfig } from '../config/types.ts';
import { ProtoError } from '../errors.ts';
import { joinUrl, rewriteDeep } from '../manifest/rewrite.ts';
import { compileExpression, compileTemplate, type CompiledExpression, type CompiledTemplate } from '../mapping/jsonata.ts';
import { renderPath } from '../mapping/path-template.ts';
import { isSuccess, refusalOf, type QueryResult } from '../queries/query-answer.ts';
import type { QueryCall } from '../queries/query-call.ts';
import { queryString } from '../queries/query-parameters.ts';
import { getJson } from './backend-http.ts';
import type { LegacyBackend } from './legacy-backend.ts';

/** One configured query, its mappings compiled. */
interface MappedQuery {
  method: string;
  path: CompiledTemplate;
  query?: CompiledExpression;
  result?: CompiledExpression;
}

/** The queries of every legacy backend, compiled; a reload hands over a changed backend's with `install`. */
export class LegacyQueries {
  /** By backend id, then by `schema/version`. */
  readonly #mapped = new Map<string, Map<string, MappedQuery>>();

  /** Compiles every query mapping of `backends` (the config loader has already checked they compile). */
  constructor(backends: LegacyBackend[]) {
    for (const backend of backends) this.install(backend);
  }

  /** Compiles `backend`'s query mappings and puts them in place of its previous ones (a reload). */
  install(backend: LegacyBackend): void {
    this.#mapped.set(backend.id, new Map(backend.config.queries.map((query) => [keyOf(query.schema, query.version), compile(query)])));
  }

  /** Drops a removed backend's mappings. */
  forget(backendId: string): void {
    this.#mapped.delete(backendId);
  }

  /** Runs `call` against `backend`. */
  async run(backend: LegacyBackend, call: QueryCall): Promise<QueryResult> {
    const mapped = this.#mapped.get(backend.id)?.get(keyOf(call.entry.schema, call.entry.version));
    if (!mapped) throw new ProtoError('UNKNOWN_SCHEMA', `no query ${call.entry.schema}/${call.entry.version}`);
    const input = { params: call.params };
    const path = await renderPath(mapped.path, input).catch(unfilled);
    const search = mapped.query ? queryString(await mapped.query.evaluate(input).catch(unfilled)) : '';
    const headers = { ...backend.config.headers, ...identityHeaders(backend.config.forwardIdentity, call.caller) };
    const answer = await getJson(joinUrl(backend.config.url, path) + search, { method: mapped.method, headers, timeoutMs: call.timeoutMs, traceparent: call.traceparent });
    if (!isSuccess(answer.status)) {
      const refusal = refusalOf(answer);
      return { ...refusal, body: rewriteDeep(refusal.body, backend.rewrite) };
    }
    return { status: 200, body: rewriteDeep(await result(mapped, answer.body, answer.status), backend.rewrite) };
  }
}

function unfilled(err: unknown): never {
  throw new ProtoError('INVALID_PARAMETER', `the parameters do not fill the query's request: ${(err as Error).message}`);
}

async function result(mapped: MappedQuery, response: unknown, status: number): Promise<unknown> {
  if (!mapped.result) return response ?? null;
  try {
    return (await mapped.result.evaluate({ response, status })) ?? null;
  } catch (err) {
    throw new ProtoError('BACKEND_UNAVAILABLE', 'the backend answered something the query result cannot be mapped from', { mapping: (err as Error).message });
  }
}

function compile(query: LegacyQueryConfig): MappedQuery {
  return {
    method: query.request.method.toUpperCase(),
    path: compileTemplate(query.request.path),
    ...(query.request.query !== undefined && { query: compileExpression(query.request.query) }),
    ...(query.result !== undefined && { result: compileExpression(query.result) }),
  };
}

function keyOf(schema: string, version: string): string {
  return `${schema}/${version}`;
}
