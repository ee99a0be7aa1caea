/**
 * The MCP server instance (SDK v2 low-level `Server`), built per request by the serving entry for
 * both eras from one factory: the tool list, the tool runner over the gateway's pipelines, and
 * progress notifications for `send_command_and_wait`. The caller (principal and follow-list owner)
 * arrives as the request's pass-through `authInfo`, set by the bridge after the gateway's own
 * authentication; nothing about a client is kept in the instance.
 */
import { Server, type AuthInfo, type McpServerFactory } from '@modelcontextprotocol/server';
import type { Principal } from '../../http/route.ts';
import type { CloudEvent } from '../../log/EventLog.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { CommandFollow } from './command-follow.ts';
import type { FollowOwner, FollowStore } from './follow-store.ts';
import { toolsFor } from './mcp-tool-set.ts';
import { NOBODY } from '../../edge/access-rules.ts';
import { correlationOf, listResources, readResource, RESOURCE_TEMPLATES } from './mcp-resources.ts';
import type { ToolRunner, ToolSession, ToolSurface } from './mcp-tools.ts';

/** The method of the push notification (params `{ correlationId, event }`). */
export const EVENT_NOTIFICATION = 'notifications/proto/event';
/** The `_meta` key carrying the event in a `notifications/progress` of `send_command_and_wait`. */
export const PROGRESS_EVENT_META_KEY = 'io.proto-gateway/event';

const INSTRUCTIONS =
  'proto-gateway: discover commands with get_command_catalogue and get_command_schema, send them with send_command ' +
  '(their result events are pushed as notifications/proto/event: on the 2025 session stream, or on a subscriptions/listen ' +
  'stream for proto-gateway://events/mine) or send_command_and_wait (each event also as notifications/progress); ' +
  'read with get_query_catalogue, execute_query and get_events.';

/** Who a request is served for, as the bridge hands it over. */
export interface McpCaller {
  principal: Principal;
  /** Whose follow list `send_command` adds to: the 2025 session, or the principal. */
  owner: FollowOwner;
}

/** What the factory closes over (built once, at boot). */
export interface McpServerOptions {
  serverVersion: string;
  runTool: ToolRunner;
  store: FollowStore;
  tail: LiveTail;
  aliases: AliasSource;
  /** The log's head position (where a new follow starts). */
  head(): Promise<number>;
  /** Told after a follow was added on this replica (its owner's open streams here re-read their list at once). */
  onFollowed(owner: FollowOwner): void;
  /** What the resources are read from. */
  surface: Omit<ToolSurface, 'metrics'>;
}

/** The pass-through `authInfo` that carries `caller` into the factory. */
export function callerAuthInfo(caller: McpCaller): AuthInfo {
  return { token: '', clientId: caller.principal.id, scopes: [...caller.principal.scopes], extra: { caller } };
}

/** The factory both eras are served from. */
export function createServerFactory(options: McpServerOptions): McpServerFactory {
  return ({ authInfo }) => {
    const caller = authInfo?.extra?.caller as McpCaller | undefined;
    const server = new Server(
      { name: 'proto-gateway', version: options.serverVersion },
      { capabilities: { tools: {}, resources: { subscribe: true }, logging: {} }, instructions: INSTRUCTIONS },
    );
    resourceHandlers(server, options, caller);
    // Each caller is listed the tools its scopes allow (a read-only caller has no send_command).
    // The definitions are plain JSON (the SDK's JSON value type is narrower than `object`).
    server.setRequestHandler('tools/list', () => ({ tools: toolsFor((caller?.principal ?? NOBODY).scopes) as never }));
    server.setRequestHandler('tools/call', async (request, ctx) => {
      // The bridge sets the caller on every request it lets through; none here is a wiring bug.
      if (!caller) throw new Error('MCP request without a caller');
      const token = ctx.mcpReq._meta?.progressToken;
      let progress = 0;
      const onEvent = async (event: CloudEvent) => {
        if (token === undefined) return;
        progress += 1;
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress, message: event.type, _meta: { [PROGRESS_EVENT_META_KEY]: event } },
        });
      };
      const result = await options.runTool(request.params.name, request.params.arguments, toolSession(options, caller, onEvent));
      // The gateway's word on the caller's own call, for clients following `logging`.
      await ctx.mcpReq.log(result.isError ? 'warning' : 'info', { tool: request.params.name, outcome: result.isError ? 'error' : 'ok', ...(result.isError && { message: result.content[0]?.text }) }).catch(() => {});
      return result;
    });
    return server;
  };
}

/** `resources/*`: list, templates, read, and subscribe (2025 era) to a correlation id's events. */
function resourceHandlers(server: Server, options: McpServerOptions, caller: McpCaller | undefined): void {
  // Per-caller catalogues; without a caller (a wiring bug) only what has no `access` list.
  const view = options.surface.access.viewOf(caller?.principal ?? NOBODY);
  server.setRequestHandler('resources/list', () => ({ resources: listResources(options.surface, view) }));
  server.setRequestHandler('resources/templates/list', () => ({ resourceTemplates: RESOURCE_TEMPLATES }));
  server.setRequestHandler('resources/read', (request) => readResource(options.surface, request.params.uri, view));
  server.setRequestHandler('resources/subscribe', async (request) => {
    const correlationId = correlationOf(request.params.uri);
    // The caller's own commands are followed already; another URI changes only when the catalogues do.
    if (caller && correlationId !== undefined) {
      await options.store.follow(caller.owner, correlationId, await options.head());
      options.onFollowed(caller.owner);
    }
    return {};
  });
  server.setRequestHandler('resources/unsubscribe', async (request) => {
    const correlationId = correlationOf(request.params.uri);
    if (caller && correlationId !== undefined) await options.store.unfollow(caller.owner, correlationId);
    return {};
  });
}

function toolSession(options: McpServerOptions, caller: McpCaller, onEvent: (event: CloudEvent) => Promise<void>): ToolSession {
  return {
    principal: caller.principal,
    follow: async (commandId) => {
      await options.store.follow(caller.owner, commandId, await options.head());
      options.onFollowed(caller.owner);
    },
    unfollow: (commandId) => options.store.unfollow(caller.owner, commandId),
    watch: (commandId) => CommandFollow.open(options.tail, options.aliases, commandId, options.surface.access.eventsSeenBy(caller.principal), onEvent),
  };
}
