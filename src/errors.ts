/**
 * The one error catalogue. Every refusal the gateway makes is a `ProtoError` with a stable `code`;
 * the HTTP edge turns it into the protocol's error body
 * `{ "error": { "code", "message", "details"? } }` with the status listed here.
 * Codes are never renamed or reused (DESIGN.md, Conventions); add new ones at the end.
 */
export const errorStatus = {
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  INVALID_JSON: 400,
  PAYLOAD_TOO_LARGE: 413,
  INVALID_ENVELOPE: 400,
  UNKNOWN_COMMAND_TYPE: 422,
  DATASCHEMA_MISMATCH: 400,
  VALIDATION_FAILED: 400,
  DUPLICATE_COMMAND: 409,
  COMMAND_NOT_ACCEPTED: 422,
  INVALID_PARAMETER: 400,
  INVALID_CURSOR: 400,
  UNKNOWN_SCHEMA: 404,
  SERVICE_NOT_FOUND: 404,
  CONFLICT: 409,
  RATE_LIMITED: 429,
  TOO_MANY_STREAMS: 429,
  WEBHOOK_URL_REJECTED: 400,
  BACKEND_UNAVAILABLE: 503,
  BACKEND_TIMEOUT: 504,
  NOT_READY: 503,
  /** The durable store (Redis) is unreachable or did not confirm a write: nothing was acknowledged. */
  STORE_UNAVAILABLE: 503,
  INTERNAL: 500,
  /** A runtime service endpoint refused by the SSRF guard (`registry.allowNetworks`); `details.reason` as for webhooks. */
  SERVICE_ENDPOINT_REJECTED: 400,
  /** `webhooks.maxSubscriptionsPerPrincipal` or `webhooks.maxSubscriptions` reached; `details.limit` says which. */
  TOO_MANY_SUBSCRIPTIONS: 429,
  /** `mcp.maxSessions` MCP sessions are open: a new one is refused until one ends (DELETE or idle expiry). */
  TOO_MANY_SESSIONS: 503,
  /**
   * A per-principal quota is used up (MCP sessions, A2A tasks, push-notification configs, pending
   * push notifications); `details.limit` names the config key, `details.max` its value.
   */
  QUOTA_EXCEEDED: 429,
  /** A stream's reader left more than its byte bound unread (`sse.maxBufferedBytes`) and was ended; resume with the last event id. */
  SLOW_CONSUMER: 429,
  /** The identity provider (`auth.oauth2`: discovery, keys, introspection) cannot be reached, so a token cannot be checked yet. */
  IDENTITY_PROVIDER_UNAVAILABLE: 503,
  /**
   * The gateway's shared stream pool (`sse.maxConnections`: SSE, gRPC `Subscribe`, MCP and A2A
   * streams together) is full: overload, so 503 with `Retry-After` (one caller over its own share
   * is 429 `TOO_MANY_STREAMS`).
   */
  STREAMS_EXHAUSTED: 503,
  /**
   * The A2A task store (`a2a.maxTasks`, every replica's) is full of other callers' tasks: a new task
   * never evicts one, so overload, 503 with `Retry-After` (when the soonest task expires).
   */
  TASKS_EXHAUSTED: 503,
  /** The request line and headers together exceed Node's limit (16 KiB by default, `--max-http-header-size`): RFC 6585 §5. */
  HEADERS_TOO_LARGE: 431,
} as const;

/** A stable, machine-readable error code. */
export type ErrorCode = keyof typeof errorStatus;

/** The protocol's error body (PROTOCOL-NOTES.md, Errors and status codes). */
export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: Record<string, unknown> };
}

/** A refusal with a catalogued code; deep code throws it, only the HTTP edge maps it to a response. */
export class ProtoError extends Error {
  readonly code: ErrorCode;
  readonly details?: Record<string, unknown>;
  /** Extra response headers (e.g. `Retry-After`, `Allow`). */
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, details?: Record<string, unknown>, headers?: Record<string, string>) {
    super(message);
    this.name = 'ProtoError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  /** The HTTP status of this error's code. */
  get status(): number {
    return errorStatus[this.code];
  }

  /** The protocol's error body. */
  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.details) error.details = this.details;
    return { error };
  }
}

/** True for a `ProtoError` (also across module copies). */
export function isProtoError(err: unknown): err is ProtoError {
  return err instanceof ProtoError;
}
