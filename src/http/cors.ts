/**
 * CORS for `server.cors.origins` (browsers reading the stream and queries). An allowed origin gets
 * `Access-Control-Allow-Origin` on every answer and its preflight answered with 204; other
 * origins get no CORS headers (the browser then refuses on its side). `*` allows any origin.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * What a page may send: credentials, trace context, the stream's resume point, and the headers of
 * the agent protocols a browser client speaks (MCP Streamable HTTP: the protocol version, the
 * session, the 2026 revision's method and name; A2A: its version and extensions).
 */
const ALLOWED_HEADERS = [
  'Authorization', 'Content-Type', 'Accept', 'X-Api-Key', 'X-Request-Id', 'Last-Event-ID', 'traceparent', 'tracestate',
  'Mcp-Protocol-Version', 'Mcp-Session-Id', 'Mcp-Method', 'Mcp-Name', 'A2A-Version', 'A2A-Extensions', 'X-A2A-Extensions',
].join(', ');
/** What a page may read: the request id, when to retry, a 401's challenge (where to get a token), an MCP session's id. */
const EXPOSED_HEADERS = 'X-Request-Id, Retry-After, WWW-Authenticate, Mcp-Session-Id, Mcp-Protocol-Version';

export interface Cors {
  /** Adds the CORS headers for this request's origin, if it is allowed. */
  apply(req: IncomingMessage, res: ServerResponse): void;
  /** Answers a preflight for an allowed origin; returns false when it is not one. */
  preflight(req: IncomingMessage, res: ServerResponse, methods: string[]): boolean;
}

/** Builds the CORS policy for a list of origins (`*` = any). */
export function createCors(origins: string[], apiKeyHeader: string): Cors {
  const any = origins.includes('*');
  const allowed = new Set(origins.map((o) => o.replace(/\/$/, '')));
  const allowHeaders = `${ALLOWED_HEADERS}, ${apiKeyHeader}`;
  const originOf = (req: IncomingMessage) => {
    const origin = req.headers.origin;
    return typeof origin === 'string' && (any || allowed.has(origin)) ? origin : undefined;
  };
  return {
    apply(req, res) {
      const origin = originOf(req);
      if (!origin) return;
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Expose-Headers', EXPOSED_HEADERS);
      res.setHeader('Vary', 'Origin');
    },
    preflight(req, res, methods) {
      const origin = originOf(req);
      if (!origin || !req.headers['access-control-request-method']) return false;
      res.writeHead(204, {
        'Access-Control-Allow-Origin': origin,
        'Access-Control-Allow-Methods': methods.join(', '),
        'Access-Control-Allow-Headers': allowHeaders,
        'Access-Control-Max-Age': '600',
        Vary: 'Origin',
      });
      res.end();
      return true;
    },
  };
}
