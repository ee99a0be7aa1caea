/**
 * The MCP front, wired: the tool runner over the gateway's pipelines, the session table, and the
 * routes of `{publicUrl}mcp` (POST for JSON-RPC messages, GET for the session's notification
 * stream, DELETE to end it). Every request is authenticated by the gateway's authenticator like
 * any route (API key header or `Authorization: Bearer`); tool scopes are checked per tool (`read`
 * for the route, `write` for sending commands) against the operations table of `edge/`. Sessions
 * take slots of the admission path's session pool, each session stream (GET) a slot of the shared
 * stream pool. JSON bodies are read within `server.bodyLimit` and `server.maxJsonDepth`.
 * Absent or disabled `mcp` section = no routes.
 */
import type { Logger } from 'pino';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import type { GatewayConfig } from '../../config/types.ts';
import type { Admission } from '../../edge/admission.ts';
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
  surface: Omit<ToolSurface, 'metrics' | 'admission'>;
  admission: Admission;
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
    pool: options.admission.mcpSessions,
    idleTimeoutMs: options.config.idleTimeoutMs,
    serverVersion: options.serverVersion,
    runTool: createToolRunner({ ...options.surface, metrics, admission: options.admission }),
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
      await sessions.open(ctx.principal, ctx.req, ctx.res, body);
      return undefined;
    }
    await existing(ctx).transport.handleRequest(ctx.req, ctx.res, body);
    return undefined;
  };
  const listen = async (ctx: RequestContext): Promise<undefined> => {
    const session = existing(ctx);
    const slot = options.admission.streams.take(ctx.principal);
    metrics.pushStream(1);
    ctx.res.once('close', () => {
      slot.release();
      metrics.pushStream(-1);
    });
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
      { method: 'POST', path: MCP_PATH, operation: 'mcp.session', handle: post },
      { method: 'GET', path: MCP_PATH, operation: 'mcp.session', handle: listen },
      { method: 'DELETE', path: MCP_PATH, operation: 'mcp.session', handle: remove },
    ],
  };
}
