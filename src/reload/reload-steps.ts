/**
 * The parts of a running gateway that follow a configuration reload, in the order they apply, each
 * taking its slice of the new generation as one replacement (nothing is rebuilt under live
 * connections):
 *
 * 1. `backends`: the directory adds, replaces and removes configured backends; its listeners follow
 *    (catalogues swap compiled entries, ingestors and record pollers stop and start, the dispatcher's
 *    adapters and lanes open and close). A removed backend's undelivered commands end with
 *    `SERVICE_NOT_FOUND`, as for a deleted runtime service; the per-caller `access` rules follow.
 *    Runtime-registered services are untouched, and a new configured id that one of them holds
 *    makes the reload invalid.
 * 2. `auth`: the keys and their scopes (removed or changed keys are refused at once and the streams
 *    they opened end), the OAuth2 settings (a new identity replaces the old one), the stream pool's bounds.
 * 3. `cors`, `logLevel`, `limits` (rate limit, SSE, MCP, A2A, webhook caps), `retention`.
 */
import type { Logger } from 'pino';
import type { BackendDirectory } from '../backends/directory.ts';
import type { ReloadableA2a } from '../bridges/a2a/create-a2a.ts';
import type { ReloadableMcp } from '../bridges/mcp/create-mcp.ts';
import type { SseHub } from '../bridges/sse/sse-hub.ts';
import type { Subscriptions } from '../bridges/webhooks/subscriptions.ts';
import type { PrincipalRateLimit } from '../commands/rate-limit.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { AccessRules } from '../edge/access-rules.ts';
import type { Admission, AdmissionOptions } from '../edge/admission.ts';
import type { Pruner } from '../log/pruner.ts';
import type { ReloadStep } from './config-reloader.ts';

/** The reloadable parts, as the wiring built them. */
export interface Reloadables {
  /** The configuration the process started with (settings that need a restart keep their value from it). */
  boot: GatewayConfig;
  logger: Logger;
  backends: BackendDirectory;
  /** True when `id` is a runtime-registered service (with or without an endpoint). */
  isRuntimeService(id: string): boolean;
  /** Ends a removed backend's undelivered commands (`SERVICE_NOT_FOUND`); resolves with how many. */
  abandonCommands(backendId: string, source: string): Promise<number>;
  /** Every `AccessRules` built from the backends. */
  access: AccessRules[];
  admission: Admission;
  /** Replaces the OAuth2 identity (and the admission's verifiers after the keys) for new `auth.oauth2` settings. */
  replaceIdentity?(next: GatewayConfig): Promise<Pick<AdmissionOptions, 'verifiers' | 'challenges'>>;
  /** Replaces the CORS policy and the origin guard for new `server.cors.origins`. */
  cors(origins: string[]): void;
  rateLimit: PrincipalRateLimit;
  sse: SseHub;
  mcp?: ReloadableMcp;
  a2a?: ReloadableA2a;
  subscriptions: Subscriptions;
  retention: Pruner;
}

/** The reload steps over `parts` (see the module comment). */
export function reloadSteps(parts: Reloadables): ReloadStep[] {
  return [backendsStep(parts), authStep(parts), corsStep(parts), logLevelStep(parts), limitsStep(parts), retentionStep(parts)];
}

function backendsStep(parts: Reloadables): ReloadStep {
  return {
    name: 'backends',
    check: (next) => {
      const taken = next.backends.filter((b) => !parts.backends.isConfigured(b.id) && parts.isRuntimeService(b.id)).map((b) => b.id);
      if (taken.length > 0) throw new Error(`backends: ${taken.join(', ')} is a service registered at runtime; delete it (DELETE /services/{id}) before configuring it`);
    },
    apply: async (next) => {
      const changes = await parts.backends.reconfigure(next.backends);
      for (const rules of parts.access) rules.reconfigure(next.backends);
      for (const removed of changes.removed) {
        const ended = await parts.abandonCommands(removed.id, removed.config.source);
        if (ended > 0) parts.logger.info({ backend: removed.id, commands: ended }, 'undelivered commands of a removed backend failed with SERVICE_NOT_FOUND');
      }
    },
  };
}

function authStep(parts: Reloadables): ReloadStep {
  return {
    name: 'auth',
    apply: async (next, previous) => {
      // The identity also reserves the key ids (a token may not claim one): new keys, new identity.
      const keyIds = (config: GatewayConfig) => config.auth.keys.map((key) => key.id).sort().join();
      const oauth2Changed = JSON.stringify(next.auth.oauth2) !== JSON.stringify(previous.auth.oauth2);
      const identity = parts.replaceIdentity && (oauth2Changed || keyIds(next) !== keyIds(previous)) ? await parts.replaceIdentity(next) : {};
      // The scheme (type, header, query parameter) needs a restart: only the keys and OAuth2 settings change here.
      const auth = { ...parts.boot.auth, keys: next.auth.keys, ...(next.auth.oauth2 && { oauth2: next.auth.oauth2 }) };
      // New provider settings: a token accepted under the old ones is checked anew when its stream reconnects.
      const revoked = parts.admission.reconfigure({ config: { auth, sse: next.sse, mcp: next.mcp }, ...identity, endTokenStreams: oauth2Changed });
      if (revoked.length > 0) parts.logger.warn({ principals: revoked }, 'credentials removed or changed by the reload: refused from now on, their streams ended');
    },
  };
}

function corsStep(parts: Reloadables): ReloadStep {
  return { name: 'cors', apply: (next) => parts.cors(next.server.cors.origins) };
}

function logLevelStep(parts: Reloadables): ReloadStep {
  return {
    name: 'logLevel',
    apply: (next) => {
      parts.logger.level = next.server.logLevel;
    },
  };
}

function limitsStep(parts: Reloadables): ReloadStep {
  return {
    name: 'limits',
    apply: (next) => {
      parts.rateLimit.reconfigure(next.commands.rateLimit);
      parts.sse.reconfigure(next.sse);
      parts.mcp?.reconfigure(next.mcp);
      parts.a2a?.reconfigure(next.a2a);
      parts.subscriptions.reconfigure({ perPrincipal: next.webhooks.maxSubscriptionsPerPrincipal, total: next.webhooks.maxSubscriptions });
    },
  };
}

function retentionStep(parts: Reloadables): ReloadStep {
  return { name: 'retention', apply: (next) => parts.retention.reconfigure(next.events.retention) };
}
