/**
 * Origin and Host validation for the endpoints a web page must not be able to drive through a
 * visitor's browser: the MCP endpoint (MCP Streamable HTTP, "Security Warning": servers MUST
 * validate `Origin` to prevent DNS rebinding) and the A2A JSON-RPC endpoint.
 *
 * - `Origin`, when present, must be the public URL's origin or one of `server.cors.origins`
 *   (`*` there allows any); absent is allowed (non-browser clients send none). `Origin: null`
 *   (sandboxed frames, file pages) is refused.
 * - `Host` must name the public URL's host (its port, or none when the URL uses its scheme's
 *   default port) or one of `mcp.allowedHosts` (`name` = any port, `name:port` = that port). A
 *   rebinding page reaches the gateway under its own name, so its `Host` never matches.
 *
 * A refusal is 403 `FORBIDDEN` with the protocol's error body, before the endpoint reads anything.
 */
import type { IncomingMessage } from 'node:http';
import { ProtoError } from '../errors.ts';
import type { RequestContext, Route } from './route.ts';

/** What the guard allows, fixed at boot. */
export interface OriginGuardOptions {
  /** The consumer-facing base URL (`server.publicUrl`, or the listening URL when unset). */
  publicUrl: string;
  /** `server.cors.origins`: browser origins allowed besides the public URL's own. */
  corsOrigins: readonly string[];
  /** `mcp.allowedHosts`: more `Host` values accepted (`name` or `name:port`); default none. */
  allowedHosts: readonly string[];
}

/** Throws 403 `FORBIDDEN` unless the request's `Origin` and `Host` are allowed. */
export type OriginGuard = (req: IncomingMessage) => void;

const DEFAULT_PORTS: Record<string, string> = { 'http:': '80', 'https:': '443' };

/** Builds the guard once, at boot. */
export function createOriginGuard(options: OriginGuardOptions): OriginGuard {
  const publicUrl = new URL(options.publicUrl);
  const anyOrigin = options.corsOrigins.includes('*');
  const origins = new Set([publicUrl.origin, ...options.corsOrigins.map((o) => o.replace(/\/$/, '').toLowerCase())]);
  const hosts = new Set([hostKey(publicUrl.hostname, publicUrl.port || DEFAULT_PORTS[publicUrl.protocol]), ...options.allowedHosts.map((h) => h.toLowerCase())]);
  const defaultPort = DEFAULT_PORTS[publicUrl.protocol];
  return (req) => {
    const origin = req.headers.origin;
    if (origin !== undefined && !anyOrigin && !origins.has(origin.toLowerCase())) {
      throw new ProtoError('FORBIDDEN', `requests from the origin ${JSON.stringify(origin)} are not allowed (server.cors.origins)`);
    }
    const host = parseHost(req.headers.host);
    const allowed = host !== undefined && (hosts.has(host.name) || hosts.has(hostKey(host.name, host.port ?? defaultPort)));
    if (!allowed) throw new ProtoError('FORBIDDEN', `the Host ${JSON.stringify(req.headers.host ?? '')} is not this gateway's (server.publicUrl, mcp.allowedHosts)`);
  };
}

/** The routes with the guard run before their handler. */
export function guarded(routes: Route[], guard: OriginGuard): Route[] {
  return routes.map((route) => ({
    ...route,
    handle: (ctx: RequestContext) => {
      guard(ctx.req);
      return route.handle(ctx);
    },
  }));
}

function hostKey(name: string, port: string | undefined): string {
  return port === undefined ? name : `${name}:${port}`;
}

/** `name[:port]` of a Host header, lowercased (IPv6 literals keep their brackets), or undefined when it is not one. */
function parseHost(header: string | undefined): { name: string; port?: string } | undefined {
  if (header === undefined || header === '') return undefined;
  const url = URL.parse(`http://${header}/`);
  // A Host carrying a path, userinfo or query is not a host.
  if (!url || url.username !== '' || url.password !== '' || url.pathname !== '/' || url.search !== '' || url.hash !== '') return undefined;
  if (`${url.host}` !== header.toLowerCase() && `${url.hostname}:80` !== header.toLowerCase()) return undefined;
  const port = /:(\d+)$/.exec(header)?.[1];
  return { name: url.hostname, ...(port !== undefined && { port: String(Number(port)) }) };
}
