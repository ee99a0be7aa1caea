/**
 * The MCP feature (`mcp.enabled`, default on): the MCP server at `/mcp` with its follow store
 * (sessions and follow lists, shared on Redis) and its metrics, joined to `life` (the store closes
 * after the streams).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { GatewayConfig } from '../../config/types.ts';
import type { Admission } from '../../edge/admission.ts';
import type { Lifecycle } from '../../lifecycle.ts';
import type { EventLog } from '../../log/EventLog.ts';
import { mcpMetrics } from '../../metrics/mcp.ts';
import { GATEWAY_VERSION } from '../../version.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import { MAX_FOLLOWS } from './follow-store.ts';
import { mcpBridge, type McpBridge } from './mcp-bridge.ts';
import type { ToolSurface } from './mcp-tools.ts';
import { openFollowStore } from './open-follow-store.ts';

/** What MCP needs. */
export interface McpDeps {
  config: GatewayConfig['mcp'];
  storage: GatewayConfig['storage'];
  /** What its tools reach: commands, queries, events, the manifest, the live tail. */
  surface: Omit<ToolSurface, 'metrics' | 'admission'>;
  aliases: AliasSource;
  /** The one admission path: tool scopes, the session pool and the stream pool. */
  admission: Admission;
  /** The log's head position (where a new follow starts replaying). */
  log: Pick<EventLog, 'head'>;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The MCP bridge, or undefined when `mcp.enabled` is false. */
export async function createMcp(deps: McpDeps): Promise<ReloadableMcp | undefined> {
  const { config } = deps;
  if (!config.enabled) return undefined;
  // Read by the store at each call: a reload changes the session bounds in place (`reconfigure`).
  const limits = { maxSessions: config.maxSessions, maxSessionsPerPrincipal: config.maxSessionsPerPrincipal, idleTimeoutMs: config.idleTimeoutMs, maxFollows: MAX_FOLLOWS };
  const store = await openFollowStore(deps.storage, limits);
  deps.life.add({ close: () => store.close() });
  const mcp = mcpBridge({
    config,
    surface: deps.surface,
    aliases: deps.aliases,
    admission: deps.admission,
    store,
    head: () => deps.log.head(),
    serverVersion: GATEWAY_VERSION,
    metrics: mcpMetrics(deps.registry),
    logger: deps.logger,
  });
  deps.life.add(mcp.component);
  return {
    ...mcp,
    reconfigure: (next) => {
      limits.maxSessions = next.maxSessions;
      limits.maxSessionsPerPrincipal = next.maxSessionsPerPrincipal;
    },
  };
}

/** The MCP bridge as the wiring holds it: `reconfigure` takes a reload's session bounds (open sessions stay). */
export interface ReloadableMcp extends McpBridge {
  reconfigure(next: Pick<GatewayConfig['mcp'], 'maxSessions' | 'maxSessionsPerPrincipal'>): void;
}
