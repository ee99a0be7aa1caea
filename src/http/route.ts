/**
 * What a route is: the contract between the HTTP core and the handlers that features contribute.
 * Handlers see a `RequestContext` and return a `Reply`; protocol logic never sees node:http.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { Principal } from '../edge/credentials.ts';
import type { Operation } from '../edge/operations.ts';
import type { ProtoError } from '../errors.ts';

export type { Principal } from '../edge/credentials.ts';

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** Path parameters of the matched pattern (`*` holds the wildcard rest). */
  params: Record<string, string>;
  query: URLSearchParams;
  principal: Principal;
  requestId: string;
  /** W3C trace context to forward to backends (the caller's, or a new one). */
  traceparent: string;
  log: Logger;
  /** Reads and parses the JSON body within `server.bodyLimit` and `server.maxJsonDepth`; throws 413/400. */
  json(): Promise<unknown>;
}

/** A JSON (or text) answer. `body` undefined = no body (204). */
export interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Default `application/json` for objects; strings are sent as they are with this type. */
  contentType?: string;
}

export interface Route {
  method: Method;
  /** find-my-way pattern, e.g. `/services/:id/events`. Also the `route` label of metrics. */
  path: string;
  /**
   * What the route does, in the one table of operations and scopes (`edge/operations.ts`); default
   * `http.read` for GET and `http.write` otherwise (DESIGN.md, Conventions: Scopes).
   */
  operation?: Operation;
  /** No credentials needed (discovery, health, schemas, spec pages). */
  public?: boolean;
  /** Still answered while the gateway shuts down (health and readiness); every other route then answers 503 `NOT_READY`. */
  duringShutdown?: boolean;
  /**
   * How this route's protocol carries a catalogued refusal (401, 403, 413, 429, 503) that the HTTP
   * core or the handler throws; default the protocol's error body. A2A answers a JSON-RPC error
   * object with the same status.
   */
  refusal?(error: ProtoError): Reply;
  /** Returns a reply, or `undefined` when it wrote the response itself (streams, pass-through). */
  handle(ctx: RequestContext): Promise<Reply | undefined> | Reply | undefined;
}
