/**
 * The MCP sessions of `{publicUrl}mcp` (Streamable HTTP, @modelcontextprotocol/sdk): one SDK
 * `Server` and transport per client session, bound to the principal that opened it. Bounded by the
 * admission path's session pool: at most `mcp.maxSessions` (a new one is then 503
 * `TOO_MANY_SESSIONS`) and `mcp.maxSessionsPerPrincipal` per caller (429 `QUOTA_EXCEEDED`, so one
 * key never takes every session); a session without a
 * request for `mcp.idleTimeout` is closed; DELETE ends one. Each session follows the commands it
 * sent (at most `MAX_FOLLOWS_PER_SESSION`, the oldest dropped beyond) and pushes their events to
 * its own notification stream only, as `notifications/proto/event`. A component: `drain()` and
 * `close()` (idempotent) end every session.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import type { Principal } from '../../edge/credentials.ts';
import type { QuotaPool } from '../../edge/quota.ts';
import { ProtoError } from '../../errors.ts';
import type { CloudEvent } from '../../log/EventLog.ts';
import type { McpMetrics } from '../../metrics/mcp.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { CommandFollow } from './command-follow.ts';
import { TOOL_DEFINITIONS } from './mcp-tool-set.ts';
import type { ToolRunner, ToolSession } from './mcp-tools.ts';

/** The method of the push notification (params `{ correlationId, event }`). */
export const EVENT_NOTIFICATION = 'notifications/proto/event';
/** Commands one session follows at once; beyond, the oldest follow ends. */
export const MAX_FOLLOWS_PER_SESSION = 100;

const INSTRUCTIONS =
  'proto-gateway: discover commands with get_command_catalogue and get_command_schema, send them with send_command ' +
  '(their result events are pushed to this session as notifications/proto/event) or send_command_and_wait; ' +
  'read with get_query_catalogue, execute_query and get_events.';

/** What the session table is built from. */
export interface McpSessionsOptions {
  /** The session pool of the admission path (`mcp.maxSessions`, `mcp.maxSessionsPerPrincipal`). */
  pool: QuotaPool;
  /** ms without a request after which a session is closed. */
  idleTimeoutMs: number;
  serverVersion: string;
  runTool: ToolRunner;
  tail: LiveTail;
  aliases: AliasSource;
  metrics: McpMetrics;
  logger: Logger;
}

/** One client session. */
class McpSession implements ToolSession {
  readonly principal: Principal;
  readonly server: Server;
  readonly transport: StreamableHTTPServerTransport;
  lastSeenMs = Date.now();
  readonly #follows = new Set<CommandFollow>();
  readonly #options: McpSessionsOptions;
  #closed = false;

  constructor(principal: Principal, options: McpSessionsOptions, onInitialized: (id: string) => void) {
    this.principal = principal;
    this.#options = options;
    this.server = new Server({ name: 'proto-gateway', version: options.serverVersion }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    this.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOL_DEFINITIONS }));
    this.server.setRequestHandler(CallToolRequestSchema, (request) => options.runTool(request.params.name, request.params.arguments, this));
    this.transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(), onsessioninitialized: onInitialized });
  }

  /** Follows `commandId` and pushes each of its events to this session. */
  async follow(commandId: string): Promise<CommandFollow> {
    const follow = await CommandFollow.open(this.#options.tail, this.#options.aliases, commandId, (event) => this.#push(commandId, event));
    this.#follows.add(follow);
    void follow.ended.then(() => this.#follows.delete(follow));
    if (this.#follows.size > MAX_FOLLOWS_PER_SESSION) this.#follows.values().next().value?.close();
    if (this.#closed) follow.close();
    return follow;
  }

  async #push(correlationId: string, event: CloudEvent): Promise<void> {
    if (this.#closed) return;
    try {
      // Sent on the session's own GET stream (no related request): only this session sees it.
      await this.server.notification({ method: EVENT_NOTIFICATION, params: { correlationId, event } } as never);
      this.#options.metrics.notified();
    } catch (err) {
      this.#options.logger.debug({ err }, 'mcp notification not sent');
    }
  }

  /** Ends the follows and the transport (idempotent). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const follow of this.#follows) follow.close();
    await this.server.close().catch(() => {});
  }
}

/** The session table. */
export class McpSessions {
  readonly #options: McpSessionsOptions;
  readonly #sessions = new Map<string, McpSession>();
  #sweeper: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: McpSessionsOptions) {
    this.#options = options;
  }

  /** Open sessions. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Starts the idle sweep (idempotent). */
  start(): void {
    if (this.#sweeper || this.#closed) return;
    const every = Math.max(1_000, Math.min(60_000, Math.floor(this.#options.idleTimeoutMs / 4)));
    this.#sweeper = setInterval(() => void this.#sweep(), every);
    this.#sweeper.unref();
  }

  /**
   * Opens a session for `principal` and lets it answer the `initialize` request. A slot of the
   * session pool is taken first (throws its refusal before anything is written; a session being
   * initialized counts too) and released when the session ends.
   */
  async open(principal: Principal, req: IncomingMessage, res: ServerResponse, body: unknown): Promise<void> {
    if (this.#closed) throw new ProtoError('NOT_READY', 'the gateway is shutting down');
    const slot = this.#options.pool.take(principal);
    let counted = false;
    const session = new McpSession(principal, this.#options, (id) => {
      counted = true;
      this.#sessions.set(id, session);
      this.#options.metrics.opened();
    });
    session.transport.onclose = () => {
      const id = session.transport.sessionId;
      if (id !== undefined && this.#sessions.get(id) === session) {
        this.#sessions.delete(id);
        this.#options.metrics.closed();
      }
      slot.release();
      void session.close();
    };
    try {
      await session.server.connect(session.transport);
      await session.transport.handleRequest(req, res, body);
    } finally {
      if (!counted) {
        slot.release();
        await session.close();
      }
    }
  }

  /** The session `id` of `principal` (another principal's session is not found), touched. */
  find(id: string, principal: Principal): McpSession | undefined {
    const session = this.#sessions.get(id);
    if (!session || session.principal.id !== principal.id) return undefined;
    session.lastSeenMs = Date.now();
    return session;
  }

  /** Ends one session (DELETE). */
  async end(session: McpSession): Promise<void> {
    await session.transport.close();
    await session.close();
  }

  /** Ends every session before the HTTP drain (their streams are long-lived). */
  async drain(): Promise<void> {
    await this.close();
  }

  /** Stops the sweep and ends every session (idempotent). */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    await Promise.all([...this.#sessions.values()].map((s) => this.end(s)));
  }

  async #sweep(): Promise<void> {
    const cutoff = Date.now() - this.#options.idleTimeoutMs;
    for (const session of this.#sessions.values()) {
      if (session.lastSeenMs < cutoff) await this.end(session);
    }
  }
}

export type { McpSession };
