/**
 * The port between the query runner and the backend adapters (`backends/proto-query.ts`,
 * `backends/legacy-query.ts`): one query to run against one backend, and what it came to.
 */
import type { ForwardedCaller } from '../backends/identity-headers.ts';
import type { QueryEntry } from '../catalogue/query-catalogue.ts';
import type { QueryResult } from './query-answer.ts';

/** One query to run. */
export interface QueryCall {
  entry: QueryEntry;
  /** The checked and coerced parameters (input `{ params }` of legacy mappings). */
  params: Record<string, unknown>;
  /** The caller's query string, its credential removed (forwarded as it is to proto backends). */
  query: URLSearchParams;
  /** W3C trace context forwarded to the backend. */
  traceparent: string;
  /** Deadline of the backend's answer, in ms. */
  timeoutMs: number;
  /** The caller, for backends with `forwardIdentity`. */
  caller?: ForwardedCaller;
}

/**
 * Runs a query against the backend it names. Resolves with the answer to send (a 2xx or a 4xx
 * passed on); rejects with a catalogued error (`BACKEND_TIMEOUT`, `BACKEND_UNAVAILABLE`,
 * `INVALID_PARAMETER` when the parameters cannot fill the request).
 */
export type QueryExecutor = (call: QueryCall) => Promise<QueryResult>;
