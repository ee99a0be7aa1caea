/**
 * The MCP front at `{publicUrl}mcp` (SDK v2), serving both protocol eras on one route, with
 * nothing a later request needs kept in this replica:
 *
 * - 2026-07-28 (a `_meta` envelope on every request): `createMcpHandler` in strict mode, a fresh
 *   server per request (`server/discover`, the `Mcp-Method`/`Mcp-Name` headers and the envelope
 *   checked by the SDK). `subscriptions/listen` is answered here: a push stream of the events of
 *   the caller's commands (`proto-gateway://events/mine`) or of a correlation id it names.
 * - 2025 era (`initialize`, no envelope): the SDK's stateless legacy serving per request, with
 *   the session (id → principal, follow list) in the `FollowStore`: any replica answers any POST
 *   of the session, and its GET stream, wherever it is held, is fed from the shared live tail.
 *
 * Every request was authenticated by the gateway like any route; the caller reaches the server
 * instance as its pass-through `authInfo`. Absent or disabled `mcp` section = no routes.
 *
 * Admission (`edge/`): tool scopes from the operations table (`write` for sending commands), a
 * 2025 session counts toward `mcp.maxSessions` and `mcp.maxSessionsPerPrincipal` (in the store,
 * so across replicas), and each push stream holds a slot of the shared stream pool.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { toNodeHandler, toWebRequest } from '@modelcontextprotocol/node';
import { createMcpHandler, isInitializeRequest, isLegacyRequest, legacyStatelessFallback, SUBSCRIPTION_ID_META_KEY } from '@modelcontextprotocol/server';
import type { GatewayConfig } from '../../config/types.ts';
import type { Admission } from '../../edge/admission.ts';
import type { Principal } from '../../edge/credentials.ts';
import { ProtoError } from '../../errors.ts';
import type { Reply, RequestContext, Route } from '../../http/route.ts';
import type { McpMetrics } from '../../metrics/mcp.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import { MAX_FOLLOWS, type Follow, type FollowOwner, type FollowStore } from './follow-store.ts';
import { FollowPump } from './follow-pump.ts';
import { callerAuthInfo, createServerFactory, type McpCaller } from './mcp-server.ts';
import { createToolRunner, type ToolSurface } from './mcp-tools.ts';
import { correlationOf, MY_EVENTS_URI } from './mcp-resources.ts';
import { PushStream } from './push-stream.ts';

/** The path of the MCP endpoint, under the public URL. */
export const MCP_PATH = '/mcp';
/** `_meta` key of a listen request naming the last event it saw of a named correlation id. */
export const LAST_EVENT_META_KEY = 'io.proto-gateway/lastEventId';

/** What the bridge is built from. */
export interface McpBridgeOptions {
  config: GatewayConfig['mcp'];
  surface: Omit<ToolSurface, 'metrics' | 'admission'>;
  admission: Admission;
  aliases: AliasSource;
  store: FollowStore;
  /** The log's head position. */
  head(): Promise<number>;
  serverVersion: string;
  metrics: McpMetrics;
  logger: Logger;
}

/** The bridge: its component (open push streams, the modern handler) and its routes. */
export interface McpBridge {
  component: { drain(): Promise<void>; close(): Promise<void> };
  routes: Route[];
}

/** Builds the MCP front. */
export function mcpBridge(options: McpBridgeOptions): McpBridge {
  const { metrics, store } = options;
  const logger = options.logger.child({ component: 'mcp' });
  const onerror = (err: Error) => logger.debug({ err }, 'mcp request failed');
  const streams = new Set<{ pump: FollowPump; stream: PushStream; owner?: FollowOwner }>();
  const factory = createServerFactory({
    onFollowed: (owner) => {
      for (const entry of streams) if (entry.owner === owner) entry.pump.wake();
    },
    serverVersion: options.serverVersion,
    runTool: createToolRunner({ ...options.surface, metrics, admission: options.admission }),
    surface: { ...options.surface, admission: options.admission },
    store,
    tail: options.surface.tail,
    aliases: options.aliases,
    head: options.head,
  });
  const modern = createMcpHandler(factory, { legacy: 'reject', onerror });
  const serveModern = toNodeHandler(modern, { onerror });
  const serveLegacy = toNodeHandler({ fetch: legacyStatelessFallback(factory, onerror) }, { onerror });
  metrics.sessionsFrom(() => store.sessionCount());

  /** Serves a push stream until the client or the gateway ends it. */
  const push = async (stream: PushStream, principal: Principal, follows: { owner?: FollowOwner; pinned?: Follow[] }) => {
    if (streams.size >= options.config.maxSessions) throw new ProtoError('STREAMS_EXHAUSTED', `${options.config.maxSessions} MCP push streams are open here; try again later`, { limit: 'mcp.maxSessions', max: options.config.maxSessions }, { 'Retry-After': '5' });
    const pump = new FollowPump({
      ...follows,
      store,
      tail: options.surface.tail,
      aliases: options.aliases,
      logger,
      // Per-caller catalogues: a followed correlation id carries only the events the caller sees.
      visible: options.surface.access.eventsSeenBy(principal),
      send: async (correlationId, event) => {
        const sent = await stream.event(correlationId, event);
        if (sent) metrics.notified();
        return sent;
      },
    });
    const entry = { pump, stream, ...(follows.owner !== undefined && { owner: follows.owner }) };
    streams.add(entry);
    metrics.pushStream(1);
    try {
      await pump.start();
      await stream.closed;
    } finally {
      pump.close();
      streams.delete(entry);
      metrics.pushStream(-1);
    }
  };

  const session = async (ctx: RequestContext, id: string): Promise<string> => {
    const principal = await store.touchSession(id);
    // MCP Streamable HTTP: an unknown or ended session is 404, and the client starts a new one.
    if (principal === undefined || principal !== ctx.principal.id) throw new ProtoError('NOT_FOUND', 'no such MCP session (it ended or expired): initialize a new one');
    return id;
  };

  const legacy = async (ctx: RequestContext, body: unknown): Promise<undefined> => {
    const header = ctx.req.headers['mcp-session-id'];
    const sessionId = typeof header === 'string' && header !== '' ? header : undefined;
    const method = ctx.req.method;
    if (method === 'GET' || method === 'DELETE') {
      if (sessionId === undefined) throw new ProtoError('METHOD_NOT_ALLOWED', `${method} /mcp needs an Mcp-Session-Id (a 2025-era session)`, { allow: 'POST' }, { Allow: 'POST' });
      const id = await session(ctx, sessionId);
      if (method === 'DELETE') {
        await store.endSession(id);
        ctx.res.writeHead(200).end();
        return undefined;
      }
      await withStreamSlot(ctx, () => push(new PushStream(ctx.res), ctx.principal, { owner: `session:${id}` }));
      return undefined;
    }
    let owner: FollowOwner = `principal:${ctx.principal.id}`;
    if (sessionId === undefined && isInitializeRequest(body)) {
      const id = randomUUID();
      const opened = await store.openSession(id, ctx.principal.id);
      if (opened !== 'opened') options.admission.refused('mcp.sessions', opened === 'full' ? 'global' : 'principal');
      if (opened === 'full') throw new ProtoError('TOO_MANY_SESSIONS', `${options.config.maxSessions} MCP sessions are open; try again later`);
      if (opened === 'principal-full') {
        throw new ProtoError('QUOTA_EXCEEDED', `${options.config.maxSessionsPerPrincipal} MCP sessions of this caller are open; end one first`, { limit: 'mcp.maxSessionsPerPrincipal', max: options.config.maxSessionsPerPrincipal });
      }
      ctx.res.setHeader('Mcp-Session-Id', id);
      owner = `session:${id}`;
    } else if (sessionId !== undefined) {
      owner = `session:${await session(ctx, sessionId)}`;
    }
    await serve(serveLegacy, ctx, body, { principal: ctx.principal, owner });
    return undefined;
  };

  /** Runs a push stream holding a slot of the shared stream pool (taken before anything is written). */
  const withStreamSlot = async (ctx: RequestContext, run: () => Promise<void>): Promise<void> => {
    // A reload that revokes the caller's credentials, or its token's expiry, ends the stream: the connection is cut.
    const slot = options.admission.streams.take(ctx.principal, () => ctx.res.destroy());
    try {
      await run();
    } finally {
      slot.release();
    }
  };

  const listen = (ctx: RequestContext, body: ListenRequest): Promise<undefined> => withStreamSlot(ctx, () => listenHeld(ctx, body)).then(() => undefined);

  const listenHeld = async (ctx: RequestContext, body: ListenRequest): Promise<void> => {
    const requested = body.params?.notifications?.resourceSubscriptions ?? [];
    // Bounded like a follow list: each honored correlation id is one live tail subscription.
    const honored = (Array.isArray(requested) ? requested : [])
      .filter((uri): uri is string => typeof uri === 'string' && (uri === MY_EVENTS_URI || correlationOf(uri) !== undefined))
      .slice(0, MAX_FOLLOWS);
    const lastSeen = lastEventIdOf(ctx, body);
    const head = await options.head();
    const pinned: Follow[] = honored.flatMap((uri) => {
      const correlationId = correlationOf(uri);
      return correlationId === undefined ? [] : [{ correlationId, afterPosition: head, ...(lastSeen !== undefined && { lastEventId: lastSeen }) }];
    });
    const meta = { [SUBSCRIPTION_ID_META_KEY]: body.id };
    const stream = new PushStream(ctx.res, meta);
    const notifications = honored.length > 0 ? { resourceSubscriptions: honored } : {};
    await stream.message({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications, _meta: meta } });
    if (honored.length === 0) {
      // Nothing to deliver: the spec's graceful end of a subscription is its (empty) result.
      await stream.message({ jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', _meta: meta } });
      stream.end();
      return;
    }
    await push(stream, ctx.principal, { ...(honored.includes(MY_EVENTS_URI) && { owner: `principal:${ctx.principal.id}` as FollowOwner }), pinned });
  };

  const handle = async (ctx: RequestContext): Promise<Reply | undefined> => {
    const body = ctx.req.method === 'POST' ? await ctx.json() : undefined;
    const invalid = invalidInitialize(body);
    if (invalid) return { status: 200, body: invalid };
    if (await isLegacyRequest(await toWebRequest(ctx.req, body), body)) return legacy(ctx, body);
    if (isListenRequest(body)) return listen(ctx, body);
    await serve(serveModern, ctx, body, { principal: ctx.principal, owner: `principal:${ctx.principal.id}` });
    return undefined;
  };

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      for (const { pump, stream } of streams) {
        pump.close();
        stream.end();
      }
      await modern.close().catch(() => {});
    })();
    return closing;
  };
  return {
    component: { drain: close, close },
    routes: [
      { method: 'POST', path: MCP_PATH, operation: 'mcp.session', handle },
      { method: 'GET', path: MCP_PATH, operation: 'mcp.session', handle },
      { method: 'DELETE', path: MCP_PATH, operation: 'mcp.session', handle },
    ],
  };
}

type NodeMcpHandler = ReturnType<typeof toNodeHandler>;

/** Hands the request to an SDK handler with the caller attached (its pass-through `authInfo`). */
async function serve(handler: NodeMcpHandler, ctx: RequestContext, body: unknown, caller: McpCaller): Promise<void> {
  Object.assign(ctx.req, { auth: callerAuthInfo(caller) });
  await handler(ctx.req, ctx.res, body);
}

/**
 * An `initialize` request whose params are not an initialize's (no `protocolVersion`, ...): the
 * SDK would answer it -32603 Internal error (its schema error, found by the fuzz suite, seed
 * 423415073); JSON-RPC's answer is -32602 Invalid params. An `initialize` inside a batch is -32600
 * Invalid Request (MCP 2025-03-26: it MUST NOT be part of a batch; later revisions have no batches;
 * fuzz seed 1852610251).
 */
function invalidInitialize(body: unknown): { jsonrpc: '2.0'; id: string | number | null; error: { code: number; message: string } } | undefined {
  if (Array.isArray(body)) {
    const batched = body.some((m) => typeof m === 'object' && m !== null && (m as { method?: unknown }).method === 'initialize');
    return batched ? { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Invalid Request: initialize cannot be part of a batch' } } : undefined;
  }
  const message = body as { method?: unknown; id?: unknown } | null;
  if (typeof message !== 'object' || message === null || Array.isArray(message) || message.method !== 'initialize') return undefined;
  if (typeof message.id !== 'string' && typeof message.id !== 'number') return undefined;
  if (isInitializeRequest(body)) return undefined;
  return { jsonrpc: '2.0', id: message.id, error: { code: -32602, message: 'Invalid params: initialize needs params { protocolVersion, capabilities, clientInfo: { name, version } }' } };
}

interface ListenRequest {
  id: string | number;
  params?: { notifications?: { resourceSubscriptions?: unknown }; _meta?: Record<string, unknown> };
}

function isListenRequest(body: unknown): body is ListenRequest {
  const message = body as { method?: unknown; id?: unknown } | null;
  return typeof message === 'object' && message !== null && message.method === 'subscriptions/listen' && (typeof message.id === 'string' || typeof message.id === 'number');
}

/** The last event the client saw: SSE's `Last-Event-ID`, or the listen request's `_meta`. */
function lastEventIdOf(ctx: RequestContext, body: ListenRequest): string | undefined {
  const header = ctx.req.headers['last-event-id'];
  if (typeof header === 'string' && header !== '') return header;
  const meta = body.params?._meta?.[LAST_EVENT_META_KEY];
  return typeof meta === 'string' && meta !== '' ? meta : undefined;
}
