/**
 * The discovery feature: the event catalogue (joined to `life`: it refreshes) and the public
 * manifest aggregated from the backends, with the gateway's own capabilities and transports.
 */
import type { Logger } from 'pino';
import type { BackendDirectory } from '../backends/directory.ts';
import { EventCatalogue } from '../catalogue/event-catalogue.ts';
import type { GatewayConfig } from '../config/types.ts';
import type { Lifecycle } from '../lifecycle.ts';
import type { EventLog } from '../log/EventLog.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { gatewayCapabilitySpecs, gatewayTransports } from './gateway-capabilities.ts';
import { PublicManifest } from './public-manifest.ts';

/** What discovery needs. */
export interface ManifestDeps {
  config: GatewayConfig;
  publicUrl: string;
  backends: BackendDirectory;
  log: EventLog;
  logger: Logger;
  life: Lifecycle;
  /** The bound gRPC port once the gRPC bridge listens (read lazily: it is built later). */
  grpcPort(): number | undefined;
  /** Whether a backend is everyone's (listed in the public manifest); absent = every backend. */
  listed?(backendId: string): boolean;
  /** With `auth.type: oauth2`: the token endpoint to advertise, once known (read when the manifest is built). */
  tokenUrl?(): string | undefined;
}

/** The event catalogue, the public manifest and the gateway's capability specs. */
export function createManifest(deps: ManifestDeps) {
  const { config, publicUrl } = deps;
  const capabilities = gatewayCapabilitySpecs(config);
  const catalogue = deps.life.add(new EventCatalogue({ publicUrl, log: deps.log, backends: deps.backends, logger: deps.logger }));
  const manifest = new PublicManifest({
    protocolVersion: config.protocol.version,
    gatewayVersion: GATEWAY_VERSION,
    publicUrl,
    auth: config.auth,
    tokenUrl: () => deps.tokenUrl?.(),
    capabilities,
    backends: deps.backends,
    listed: deps.listed,
    transports: () => gatewayTransports(config, publicUrl, deps.grpcPort(), deps.tokenUrl?.()),
  });
  return { catalogue, manifest, capabilities };
}
