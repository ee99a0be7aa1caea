/**
 * Query execution (`GET /queries/{schema}?…`, PROTOCOL-NOTES.md, Queries): look the query up in the
 * catalogue (404 `UNKNOWN_SCHEMA`), check and coerce its parameters (400 `INVALID_PARAMETER`), ask
 * the backend's circuit (open: 503 `BACKEND_UNAVAILABLE` without calling it), run it through the
 * backend's adapter within the timeout (504 `BACKEND_TIMEOUT`, unreachable 503), report the outcome
 * to the circuit and the metrics. Queries are synchronous: nothing is stored, nothing retried.
 */
import type { ForwardedCaller } from '../backends/identity-headers.ts';
import type { CircuitBreaker } from '../backends/circuit-breaker.ts';
import type { QueryCatalogue, QueryEntry } from '../catalogue/query-catalogue.ts';
import { isProtoError, ProtoError } from '../errors.ts';
import type { QueryMetrics } from '../metrics/queries.ts';
import type { QueryResult } from './query-answer.ts';
import type { QueryExecutor } from './query-call.ts';
import { checkParameters, parametersOf } from './query-parameters.ts';

/** Collaborators and settings of the runner. */
export interface QueryRunnerOptions {
  catalogue: QueryCatalogue;
  /** The circuit breaker of a backend, or undefined when the backend is gone. */
  circuitOf(backendId: string): CircuitBreaker | undefined;
  /** Runs a query against the backend its entry names (the adapters). */
  execute: QueryExecutor;
  /** Deadline of a backend's answer, in ms. */
  timeoutMs: number;
  /** The query parameter that may carry the caller's key: never validated, never forwarded. */
  credentialQueryParam?: string;
  metrics: QueryMetrics;
}

/** One query request. */
export interface QueryRequest {
  schema: string;
  query: URLSearchParams;
  traceparent: string;
  /** Scoped to one backend (`/services/{id}/queries/{schema}`). */
  backendId?: string;
  /** The caller, for backends with `forwardIdentity`. Required, as `visible`: every front names its caller. */
  caller: ForwardedCaller;
  /** Whether the caller may see the query (per-caller catalogues); a hidden one is refused as unknown. */
  visible: (entry: QueryEntry) => boolean;
}

/** Runs queries; one per gateway, built at boot. */
export class QueryRunner {
  readonly #o: QueryRunnerOptions;

  constructor(options: QueryRunnerOptions) {
    this.#o = options;
  }

  /** Runs a query; resolves with the answer to send, rejects with a catalogued error. */
  async run(request: QueryRequest): Promise<QueryResult> {
    const started = performance.now();
    let schema = 'unknown';
    try {
      const entry = this.#o.catalogue.resolve(request.schema, request.backendId, request.visible);
      schema = entry.schema;
      const result = await this.#execute(entry, request);
      this.#observe(schema, result.status < 400 ? 'ok' : 'backend_rejected', started);
      return result;
    } catch (err) {
      this.#observe(schema, isProtoError(err) ? err.code.toLowerCase() : 'internal', started);
      throw err;
    }
  }

  async #execute(entry: QueryEntry, request: QueryRequest): Promise<QueryResult> {
    const query = new URLSearchParams(request.query);
    if (this.#o.credentialQueryParam) query.delete(this.#o.credentialQueryParam);
    const params = parametersOf(query);
    checkParameters(entry, params);
    const circuit = this.#o.circuitOf(entry.backend);
    if (!circuit) throw new ProtoError('BACKEND_UNAVAILABLE', `the backend of query ${entry.schema} is gone`);
    circuit.admit();
    try {
      const result = await this.#o.execute({ entry, params, query, traceparent: request.traceparent, timeoutMs: this.#o.timeoutMs, caller: request.caller });
      circuit.succeeded();
      return result;
    } catch (err) {
      circuit[circuitOutcome(err)]();
      throw err;
    }
  }

  #observe(schema: string, outcome: string, startedMs: number): void {
    this.#o.metrics.observe(schema, outcome, (performance.now() - startedMs) / 1000);
  }
}

/**
 * What a failed query tells the circuit: no answer, a timeout or a 5xx say the backend is unwell;
 * an answer that cannot be mapped (`details.mapping`) or a refusal of the gateway's credentials
 * (a 4xx `details.status`) say it is up; a request the parameters could not fill never reached it.
 */
function circuitOutcome(err: unknown): 'failed' | 'succeeded' | 'released' {
  if (!isProtoError(err) || (err.code !== 'BACKEND_UNAVAILABLE' && err.code !== 'BACKEND_TIMEOUT')) return 'released';
  const status = err.details?.status;
  if (typeof status === 'number') return status >= 500 ? 'failed' : 'succeeded';
  return err.details?.mapping === undefined ? 'failed' : 'succeeded';
}
