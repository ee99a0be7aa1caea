/**
 * The service registry feature: runtime registration, pause and resume, over its store (opened
 * here and joined to `life`), endpoints checked by the egress guard handed in.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { BackendDirectory } from '../backends/directory.ts';
import type { StorageConfig } from '../config/types.ts';
import type { Lifecycle } from '../lifecycle.ts';
import { registryMetrics } from '../metrics/registry.ts';
import { openRegistryStore } from './open-registry-store.ts';
import { RegistryFollower } from './registry-follower.ts';
import { ServiceRegistry, type ServiceRegistryOptions } from './service-registry.ts';

/** What the registry needs (the callbacks are called only once the gateway runs). */
export interface RegistryDeps extends Pick<ServiceRegistryOptions, 'guard' | 'accepts' | 'produces' | 'onRemoved' | 'abandonCommands'> {
  storage: StorageConfig;
  backends: BackendDirectory;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
}

/**
 * Opens the registry store and builds the service registry; on a store several replicas share,
 * a `RegistryFollower` (joined to `life`) applies the other replicas' changes.
 */
export async function createRegistry(deps: RegistryDeps): Promise<ServiceRegistry> {
  const store = await openRegistryStore(deps.storage);
  deps.life.add({ close: () => store.close() });
  const services = new ServiceRegistry({
    backends: deps.backends,
    store,
    guard: deps.guard,
    accepts: deps.accepts,
    produces: deps.produces,
    onRemoved: deps.onRemoved,
    ...(deps.abandonCommands && { abandonCommands: deps.abandonCommands }),
    metrics: registryMetrics(deps.registry),
    logger: deps.logger,
  });
  // Started with the other components, after the registry was restored from the store.
  deps.life.add(new RegistryFollower(store, services, deps.logger.child({ component: 'registry' })));
  return services;
}
