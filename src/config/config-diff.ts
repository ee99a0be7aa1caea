/**
 * What changed between two loaded configurations, and which of it a reload applies in place.
 *
 * - Backends are compared by id: added, removed, changed (any part of the definition). All three
 *   apply in place (`BackendDirectory.reconfigure`).
 * - Every other setting is compared by its path (`section.key`, e.g. `sse.keepalive`'s
 *   `sse.keepaliveMs`). A path under `IN_PLACE` applies in place; any other changed path "needs a
 *   restart": what the running process built once around it (the listener, the stores and their
 *   connections, the gRPC listener, routes derived from the public URL) cannot take a
 *   replacement without dropping connections. A reload names those paths and still applies the rest.
 */
import type { GatewayConfig } from './types.ts';

/** The differences between the running configuration and a newly loaded one. */
export interface ConfigDiff {
  /** Backend ids present only in the new configuration. */
  backendsAdded: string[];
  /** Backend ids present only in the running configuration. */
  backendsRemoved: string[];
  /** Backend ids present in both with a different definition. */
  backendsChanged: string[];
  /** Top-level sections other than `backends` that differ (e.g. `auth`, `sse`). */
  sectionsChanged: string[];
  /** Changed settings (`section.key`) outside `backends`, sorted. */
  settingsChanged: string[];
}

/**
 * The settings a reload applies in place: a changed path equal to one of these or below it. Every
 * other changed setting needs a restart (listen address and port, storage, gRPC listener, …).
 */
export const IN_PLACE: readonly string[] = [
  'auth.keys',
  'auth.oauth2',
  'server.cors',
  'server.logLevel',
  'commands.rateLimit',
  'sse.keepaliveMs',
  'sse.maxBufferedBytes',
  'sse.maxConnections',
  'sse.maxConnectionsPerPrincipal',
  'sse.closeOnTerminal',
  'mcp.maxSessions',
  'mcp.maxSessionsPerPrincipal',
  'a2a.maxTasks',
  'a2a.taskTtlMs',
  'a2a.maxTasksPerPrincipal',
  'a2a.maxPushConfigsPerTask',
  'a2a.maxPushConfigsPerPrincipal',
  'webhooks.maxSubscriptions',
  'webhooks.maxSubscriptionsPerPrincipal',
  'events.retention',
];

/** Compares two configurations; `file` (where each came from) is not a difference. */
export function diffConfig(running: GatewayConfig, next: GatewayConfig): ConfigDiff {
  const before = new Map(running.backends.map((b) => [b.id, b]));
  const after = new Map(next.backends.map((b) => [b.id, b]));
  const sections = new Set([...Object.keys(running), ...Object.keys(next)]);
  sections.delete('file');
  sections.delete('backends');
  const sectionsChanged = [...sections].filter((key) => !same(running[key as keyof GatewayConfig], next[key as keyof GatewayConfig])).sort();
  return {
    backendsAdded: [...after.keys()].filter((id) => !before.has(id)),
    backendsRemoved: [...before.keys()].filter((id) => !after.has(id)),
    backendsChanged: [...after.keys()].filter((id) => before.has(id) && !same(before.get(id), after.get(id))),
    sectionsChanged,
    settingsChanged: sectionsChanged.flatMap((section) => settingsOf(section, running[section as keyof GatewayConfig], next[section as keyof GatewayConfig])).sort(),
  };
}

/** True when nothing differs. */
export function isEmptyDiff(diff: ConfigDiff): boolean {
  return Object.values(diff).every((list) => list.length === 0);
}

/** The changed settings of `diff` a reload cannot apply in place (see `IN_PLACE`). */
export function needsRestart(diff: ConfigDiff): string[] {
  return diff.settingsChanged.filter((path) => !IN_PLACE.some((prefix) => path === prefix || path.startsWith(`${prefix}.`)));
}

/** The changed keys of one section (`section.key`); the section itself when either side is not an object. */
function settingsOf(section: string, a: unknown, b: unknown): string[] {
  if (!isObject(a) || !isObject(b)) return [section];
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  // The Redis command observer is the process's own (metrics), never a setting.
  keys.delete('redisObserver');
  return [...keys].filter((key) => !same(a[key], b[key])).map((key) => `${section}.${key}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
