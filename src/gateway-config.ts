/**
 * The gateway's configuration: the list of sections, each owned by the feature it configures
 * (STYLE.md rule 7), assembled here beside `app.ts` where the features are wired, and the loaders
 * of `config/` bound to it. `config/` itself imports no feature.
 */
import { backendsSection } from './backends/config-section.ts';
import { a2aSection } from './bridges/a2a/config-section.ts';
import { grpcSection } from './bridges/grpc/config-section.ts';
import { mcpSection } from './bridges/mcp/config-section.ts';
import { sseSection } from './bridges/sse/config-section.ts';
import { webhooksSection } from './bridges/webhooks/config-section.ts';
import { commandsSection } from './commands/config-section.ts';
import { loadConfigOf, parseConfigOf } from './config/load.ts';
import type { ConfigSections } from './config/section.ts';
import type { GatewayConfig } from './config/types.ts';
import { consoleSection } from './console/config-section.ts';
import { authSection, serverSection } from './http/config-section.ts';
import { eventsSection } from './log/config-section.ts';
import { protocolSection } from './manifest/config-section.ts';
import { metricsSection } from './metrics/config-section.ts';
import { registrySection } from './registry/config-section.ts';
import { storageSection } from './storage/config-section.ts';
import { telemetrySection } from './telemetry/config-section.ts';

export { ConfigError, formatProblems, parseDuration, parseSize, type ConfigProblem } from './config/load.ts';

/** Every section of the configuration, in the order of the file's documentation (`config/gateway.yaml`). */
export const CONFIG_SECTIONS: ConfigSections = {
  server: serverSection,
  protocol: protocolSection,
  auth: authSection,
  storage: storageSection,
  metrics: metricsSection,
  events: eventsSection,
  commands: commandsSection,
  sse: sseSection,
  webhooks: webhooksSection,
  registry: registrySection,
  grpc: grpcSection,
  a2a: a2aSection,
  mcp: mcpSection,
  console: consoleSection,
  telemetry: telemetrySection,
  backends: backendsSection,
};

/**
 * Reads, checks and normalises the config at `file` (relative to the working directory). Rejects
 * with `ConfigError` listing every problem, sorted by position; a file that cannot be read at all
 * rejects with the file system error itself (`code: 'ENOENT'`…), which the CLI tells apart.
 */
export function loadConfig(file: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  return loadConfigOf(CONFIG_SECTIONS, file, env);
}

/** Checks and normalises config `text` as if read from `file` (where relative paths point); see `loadConfig`. */
export function parseConfig(text: string, file: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  return parseConfigOf(CONFIG_SECTIONS, text, file, env);
}
