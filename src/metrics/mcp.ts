/**
 * Metrics of the MCP front (`{publicUrl}mcp`). Created once per registry at boot and passed into
 * the bridge (STYLE.md: metrics are injected). Labels are bounded: `tool` is one of the fixed tool
 * names (or `unknown`), `outcome` is `ok` or `error`.
 */
import { Counter, Gauge, type Registry } from 'prom-client';

/** The MCP metrics, as the session table and the tools report into them. */
export interface McpMetrics {
  /** Where `proto_gateway_mcp_sessions` is read from at each scrape (the shared session store: every replica reports the same count). */
  sessionsFrom(count: () => Promise<number>): void;
  /** A tool call finished (`proto_gateway_mcp_tool_calls_total{tool,outcome}`). */
  toolCall(tool: string, outcome: 'ok' | 'error'): void;
  /** A session's push stream (its GET) opened or closed (`proto_gateway_mcp_push_streams` ±1). */
  pushStream(delta: 1 | -1): void;
  /** An event was pushed to a session (`proto_gateway_mcp_notifications_total`). */
  notified(): void;
}

/** Registers the MCP metrics in `registry`; call once per registry and share the result. */
export function mcpMetrics(registry: Registry): McpMetrics {
  let sessionCount: () => Promise<number> = async () => 0;
  new Gauge({
    name: 'proto_gateway_mcp_sessions',
    help: 'Open 2025-era MCP sessions (all replicas: read from the shared store).',
    registers: [registry],
    async collect() {
      this.set(await sessionCount().catch(() => 0));
    },
  });
  const calls = new Counter({
    name: 'proto_gateway_mcp_tool_calls_total',
    help: 'MCP tool calls by tool and outcome (ok, error).',
    labelNames: ['tool', 'outcome'],
    registers: [registry],
  });
  const pushStreams = new Gauge({ name: 'proto_gateway_mcp_push_streams', help: 'MCP push streams open on this replica (2025 session GET streams and 2026-07-28 subscriptions/listen streams).', registers: [registry] });
  const notifications = new Counter({
    name: 'proto_gateway_mcp_notifications_total',
    help: 'Events pushed on MCP push streams as notifications/proto/event.',
    registers: [registry],
  });
  return {
    sessionsFrom: (count) => {
      sessionCount = count;
    },
    toolCall: (tool, outcome) => calls.inc({ tool, outcome }),
    pushStream: (delta) => pushStreams.inc(delta),
    notified: () => notifications.inc(),
  };
}
