/**
 * Queries of a proto backend: `GET {endpoint}queries/{schema}?…` with the caller's query string
 * (its credential removed), the backend's configured headers and the trace context; the answer's
 * backend URLs are rewritten to public ones (PROTOCOL-NOTES.md, Queries; DESIGN.md, Conventions).
 */
import { rewriteDeep, joinUrl } from '../manifest/rewrite.ts';
import { isSuccess, refusalOf, type QueryResult } from '../queries/query-answer.ts';
import type { QueryCall } from '../queries/query-call.ts';
import { getJson } from './backend-http.ts';
import { identityHeaders } from './identity-headers.ts';
import type { ProtoBackend } from './proto-backend.ts';

/** Runs `call` against `backend`. */
export async function runProtoQuery(backend: ProtoBackend, call: QueryCall): Promise<QueryResult> {
  const search = call.query.size > 0 ? `?${call.query}` : '';
  const url = joinUrl(backend.endpoint(), `queries/${encodeURIComponent(call.entry.schema)}`) + search;
  const headers = { ...backend.config.headers, ...identityHeaders(backend.config.forwardIdentity, call.caller) };
  const answer = await getJson(url, { headers, timeoutMs: call.timeoutMs, traceparent: call.traceparent, dispatcher: backend.connections?.dispatcher });
  const result = isSuccess(answer.status) ? { status: answer.status, body: answer.body } : refusalOf(answer);
  return { ...result, body: rewriteDeep(result.body, backend.rewrite) };
}
