/**
 * The backends feature: the directory of configured and runtime-registered services, whose
 * runtime-registered endpoints connect only through the registry's SSRF guard (checked at
 * registration, pinned at every connect), with its metrics. Joins `life` (closed after the stores
 * that use it; started by `startGateway` once runtime services are restored).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { GatewayConfig } from '../config/types.ts';
import { pinnedConnections } from '../egress/pinned-connections.ts';
import { SsrfGuard, type Resolver } from '../egress/ssrf-guard.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { backendMetrics } from '../metrics/backends.ts';
import { BackendDirectory } from './directory.ts';

/** What the backends need. */
export interface BackendsDeps {
  config: GatewayConfig;
  publicUrl: string;
  /** Host resolver of the endpoint guard; default the system resolver (tests inject one). */
  resolver?: Resolver;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/** The backend directory, and the guard runtime service endpoints are checked with. */
export function createBackends(deps: BackendsDeps): { backends: BackendDirectory; endpointGuard: SsrfGuard } {
  const { config, life } = deps;
  // One guard for runtime-registered services: checked at registration, and pinned at every connect.
  const endpointGuard = new SsrfGuard({
    allowHttp: true,
    allowPublic: false,
    allowPrivateNetworks: config.registry.allowNetworks,
    resolver: deps.resolver,
    refusal: { code: 'SERVICE_ENDPOINT_REJECTED', field: 'endpoint' },
  });
  const runtimeConnections = pinnedConnections(endpointGuard);
  life.add({ close: () => runtimeConnections.close() });
  const backends = new BackendDirectory(config.backends, deps.publicUrl, deps.logger, runtimeConnections);
  // Started by startGateway itself, after runtime services are restored; closed here.
  life.add({ close: () => backends.close() });
  backendMetrics(deps.registry, backends);
  return { backends, endpointGuard };
}
