/**
 * What changed between two loaded configurations: the backends added, removed and changed (by
 * id), and the other top-level sections that differ. SIGHUP logs it (src/main.ts) so an operator
 * sees exactly what a restart would apply.
 *
 * Why a reload is not applied in place yet: the graph is assembled once at boot (STYLE.md rule 3)
 * and several parts keep what they compiled from the backends' configuration without a way to
 * swap it: the command catalogue and the legacy dispatch mappings (compiled JSON Schemas and
 * JSONata expressions), the query catalogue, the record pollers of legacy backends, the dispatcher's
 * per-backend lanes. `BackendDirectory` can add and remove only *runtime* proto backends (with
 * their own SSRF rules), not configured ones, and a changed auth key set, SSE limit or store would
 * need the HTTP front and the bridges rebuilt under live connections. Until each of those parts can
 * take a replacement (tracked as follow-up work), SIGHUP validates the file and reports this diff,
 * and the running gateway keeps its configuration: a rolling restart applies it without dropping
 * more than the SSE streams, which reconnect with `Last-Event-ID`.
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
}

/** Compares two configurations; `file` (where each came from) is not a difference. */
export function diffConfig(running: GatewayConfig, next: GatewayConfig): ConfigDiff {
  const before = new Map(running.backends.map((b) => [b.id, b]));
  const after = new Map(next.backends.map((b) => [b.id, b]));
  const sections = new Set([...Object.keys(running), ...Object.keys(next)]);
  sections.delete('file');
  sections.delete('backends');
  return {
    backendsAdded: [...after.keys()].filter((id) => !before.has(id)),
    backendsRemoved: [...before.keys()].filter((id) => !after.has(id)),
    backendsChanged: [...after.keys()].filter((id) => before.has(id) && !same(before.get(id), after.get(id))),
    sectionsChanged: [...sections].filter((key) => !same(running[key as keyof GatewayConfig], next[key as keyof GatewayConfig])).sort(),
  };
}

/** True when nothing differs. */
export function isEmptyDiff(diff: ConfigDiff): boolean {
  return Object.values(diff).every((list) => list.length === 0);
}

function same(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
