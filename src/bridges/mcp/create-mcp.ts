/** The MCP feature (`mcp.enabled`, default on): the MCP server at `/mcp`, its sessions joined to `life`, with its metrics. */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { GatewayConfig } from '../../config/types.ts';
import type { Admission } from '../../edge/admission.ts';
import type { Lifecycle } from '../../lifecycle.ts';
import { mcpMetrics } from '../../metrics/mcp.ts';
import { GATEWAY_VERSION } from '../../version.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import { mcpBridge, type McpBridge } from './mcp-bridge.ts';
import type { ToolSurface } from './mcp-tools.ts';

/** What MCP needs. */
export interface McpDeps {
  config: GatewayConfig['mcp'];
  /** What its tools reach: commands, queries, events, the manifest, the live tail. */
  surface: Omit<ToolSurface, 'metrics' | 'admission'>;
  aliases: AliasSource;
  /** The one admission path: tool scopes, the session pool and the stream pool. */
  admission: Admission;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The MCP bridge, or undefined when `mcp.enabled` is false. */
export function createMcp(deps: McpDeps): McpBridge | undefined {
  if (!deps.config.enabled) return undefined;
  const mcp = mcpBridge({ config: deps.config, surface: deps.surface, aliases: deps.aliases, admission: deps.admission, serverVersion: GATEWAY_VERSION, metrics: mcpMetrics(deps.registry), logger: deps.logger });
  deps.life.add(mcp.sessions);
  return mcp;
}
