/**
 * The MCP front, wired: the tool runner over the gateway's pipelines, the session table, and the
 * routes of `{publicUrl}mcp` (POST for JSON-RPC messages, GET for the session's notification
 * stream, DELETE to end it). Every request is authenticated by the gateway's authenticator like
 * any route (API key header or `Authorization: Bearer`); tool scopes are checked per tool (`read`
 * for the route, `write` for sending commands). Absent or disabled `mcp` section = no routes.
 */
import type { Logger } from 'pino';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayConfig } from '../../config/types.ts';
import { ProtoError } from '../../errors.ts';
import type { RequestContext, Route } from '../../http/route.ts';
import type { McpMetrics } from '../../metrics/mcp.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import { McpSessions } from './mcp-sessions.ts';
import { createToolRunner, type ToolSurface } from './mcp-tools.ts';

/** The path of the MCP endpoint, under the public URL. */
export const MCP_PATH = '/mcp';

/** What the bridge is built from. */
export interface McpBridgeOptions {
  config: GatewayConfig['mcp'];
  surface: Omit<ToolSurface, 'metrics'>;
  aliases: AliasSource;
  serverVersion: string;
  metrics: McpMetrics;
  logger: Logger;
}

/** The bridge: its component (the session table) and its routes. */
export interface McpBridge {
  sessions: McpSessions;
  routes: Route[];
}

/** Builds the MCP front. */
export function mcpBridge(options: McpBridgeOptions): McpBridge {
  const { metrics } = options;
  const sessions = new McpSessions({
    maxSessions: options.config.maxSessions,
    idleTimeoutMs: options.config.idleTimeoutMs,
    serverVersion: options.serverVersion,
    runTool: createToolRunner({ ...options.surface, metrics }),
    tail: options.surface.tail,
    aliases: options.aliases,
    metrics,
    logger: options.logger.child({ component: 'mcp' }),
  });
  const existing = (ctx: RequestContext) => {
    const id = ctx.req.headers['mcp-session-id'];
    if (typeof id !== 'string' || id === '') throw new ProtoError('INVALID_PARAMETER', 'the Mcp-Session-Id header is required (send initialize first)', { field: 'Mcp-Session-Id' });
    const session = sessions.find(id, ctx.principal);
    // MCP Streamable HTTP: an unknown or ended session is 404, and the client starts a new one.
    if (!session) throw new ProtoError('NOT_FOUND', 'no such MCP session (it ended or expired): initialize a new one');
    return session;
  };
  const post = async (ctx: RequestContext): Promise<undefined> => {
    const body = await ctx.json();
    if (ctx.req.headers['mcp-session-id'] === undefined && isInitializeRequest(body)) {
      if (!sessions.hasRoom()) throw new ProtoError('TOO_MANY_SESSIONS', `${options.config.maxSessions} MCP sessions are open; try again later`);
      await sessions.open(ctx.principal, ctx.req, ctx.res, body);
      return undefined;
    }
    await existing(ctx).transport.handleRequest(ctx.req, ctx.res, body);
    return undefined;
  };
  const listen = async (ctx: RequestContext): Promise<undefined> => {
    const session = existing(ctx);
    metrics.pushStream(1);
    ctx.res.once('close', () => metrics.pushStream(-1));
    await session.transport.handleRequest(ctx.req, ctx.res);
    return undefined;
  };
  const remove = async (ctx: RequestContext): Promise<undefined> => {
    const session = existing(ctx);
    await session.transport.handleRequest(ctx.req, ctx.res);
    await sessions.end(session);
    return undefined;
  };
  return {
    sessions,
    routes: [
      { method: 'POST', path: MCP_PATH, scope: 'read', handle: post },
      { method: 'GET', path: MCP_PATH, scope: 'read', handle: listen },
      { method: 'DELETE', path: MCP_PATH, scope: 'read', handle: remove },
    ],
  };
}
