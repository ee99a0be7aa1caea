/**
 * The service registry (PROTOCOL-NOTES.md, Services; DESIGN.md `registry`): the live list of
 * services (configured backends, runtime backends, endpoint-less entries) as descriptors, runtime
 * registration and removal, and the lifecycle (pause, resume).
 *
 * - `register` upserts. With an `endpoint`, the service becomes a runtime proto backend at that
 *   URL, but only when the URL passes the SSRF guard in its registry mode (every address inside
 *   `registry.allowNetworks`; none by default, so registration is refused until networks are
 *   listed). Without one it is an entry that can own subscriptions and is never routed to.
 * - A configured id can be neither registered nor removed (409 `CONFLICT`).
 * - Registrations and pauses are kept in the store: runtime services are restored at start-up (their
 *   endpoints checked by the guard again) and a paused service (configured ones too) stays paused
 *   across a restart.
 * - Changes are made one at a time (a queue), so concurrent upserts of one id never interleave.
 * - Several replicas on one shared store (Redis) follow each other's changes: `sync()` re-reads the
 *   store and applies what differs (services added, replaced or removed, pauses and resumes);
 *   `RegistryFollower` calls it on every change notice and version change.
 */
import type { Logger } from 'pino';
import type { BackendDirectory } from '../backends/directory.ts';
import type { ProtoBackendConfig } from '../config/types.ts';
import { ProtoError } from '../errors.ts';
import type { RegistryMetrics } from '../metrics/registry.ts';
import type { Registration } from './registration.ts';
import type { RegisteredService, RegistryStore } from './RegistryStore.ts';
import { describeBackend, describeEntry, type ServiceDescriptor } from './service-descriptor.ts';

/** Services registered at runtime at most (with or without an endpoint). */
export const MAX_REGISTERED_SERVICES = 1_000;

/**
 * The settings of a runtime proto backend (there is no config entry to take them from): the
 * defaults of a configured proto backend.
 */
export const RUNTIME_BACKEND = {
  refreshMs: 30_000,
  circuit: { failures: 5, cooldownMs: 30_000 },
  events: { follow: 'poll' as const, intervalMs: 1_000 },
};

/** Collaborators of the registry. */
export interface ServiceRegistryOptions {
  backends: BackendDirectory;
  store: RegistryStore;
  /**
   * Checks an endpoint before it is used; throws `SERVICE_ENDPOINT_REJECTED` (the SSRF guard in
   * its registry mode: `allowPublic: false`, `registry.allowNetworks`).
   */
  guard: { check(url: string): Promise<unknown> };
  /** The command types a backend accepts (command catalogue). */
  accepts(backendId: string): string[];
  /** The event types a backend produces (event catalogue). */
  produces(backendId: string): string[];
  /** Called after a service was removed (deletes its `serviceId`-linked subscriptions). */
  onRemoved(serviceId: string): Promise<unknown>;
  /**
   * Called after a backend was removed, here or by another replica: ends its undelivered commands
   * with their failure event (`SERVICE_NOT_FOUND`, from `source`); resolves with how many. Default none.
   */
  abandonCommands?(backendId: string, source: string): Promise<number>;
  metrics: RegistryMetrics;
  logger: Logger;
}

/** What `register` did. */
export interface RegistrationResult {
  created: boolean;
  descriptor: ServiceDescriptor;
}

/** The registry: descriptors, registration, removal, pause and resume (see the module comment). */
export class ServiceRegistry {
  readonly #o: ServiceRegistryOptions;
  readonly #entries = new Map<string, RegisteredService>();
  #queue: Promise<unknown> = Promise.resolve();

  constructor(options: ServiceRegistryOptions) {
    this.#o = options;
    options.metrics.watchCount(() => this.#entries.size);
  }

  /** Loads the runtime services and the pauses from the store (before the backends start). */
  async restore(): Promise<void> {
    const paused = new Set(await this.#o.store.pausedIds());
    for (const entry of await this.#o.store.list()) {
      if (this.#o.backends.isConfigured(entry.id)) {
        this.#o.logger.warn({ service: entry.id }, 'a registered service now has a configured id; the configured backend wins');
        continue;
      }
      this.#entries.set(entry.id, entry);
      if (entry.endpoint !== undefined && (await this.#stillAllowed(entry))) await this.#o.backends.add(runtimeBackend(entry), { paused: paused.has(entry.id) });
    }
    for (const id of paused) this.#o.backends.pause(id);
    if (this.#entries.size > 0) this.#o.logger.info({ services: [...this.#entries.keys()] }, 'registered services restored');
  }

  /**
   * The guard again at start-up (`registry.allowNetworks` may have narrowed, DNS may have moved):
   * a refused endpoint leaves the entry listed as `stopped`, not routed to, until it is registered again.
   */
  async #stillAllowed(entry: RegisteredService): Promise<boolean> {
    try {
      await this.#o.guard.check(String(entry.endpoint));
      return true;
    } catch (err) {
      this.#o.logger.warn({ service: entry.id, err: (err as Error).message }, 'registered endpoint refused at start-up; the service is not routed to');
      return false;
    }
  }

  /** True when `id` names a known service (a backend or a registry entry). */
  isKnown(id: string): boolean {
    return this.#o.backends.get(id) !== undefined || this.#entries.has(id);
  }

  /** Every service: the configured backends, then the registered services in registration order. */
  list(): ServiceDescriptor[] {
    const configured = this.#o.backends.list().filter((backend) => this.#o.backends.isConfigured(backend.id));
    return [...configured.map((backend) => backend.id), ...this.#entries.keys()].map((id) => this.get(id));
  }

  /** One service's descriptor; throws 404 `SERVICE_NOT_FOUND`. */
  get(id: string): ServiceDescriptor {
    const backend = this.#o.backends.get(id);
    const registered = this.#entries.get(id);
    if (backend) {
      const facts = { paused: this.#o.backends.isPaused(id), accepts: this.#o.accepts(id), produces: this.#o.produces(id) };
      return describeBackend(backend, registered ? { ...facts, registered } : facts);
    }
    if (registered) return describeEntry(registered);
    throw notFound(id);
  }

  /** Registers or updates a service (201 or 200 at the edge); see the module comment. */
  register(registration: Registration): Promise<RegistrationResult> {
    return this.#serial(() => this.#register(registration));
  }

  /** Removes a registered service, its backend and its subscriptions; 409 for a configured one, 404 for an unknown one. */
  remove(id: string): Promise<void> {
    return this.#serial(() => this.#remove(id));
  }

  /** Pauses a backend (idempotent): its commands stay in the outbox, its ingestion stops. */
  pause(id: string): Promise<void> {
    return this.#serial(() => this.#setPaused(id, true));
  }

  /** Resumes a paused backend (idempotent): held commands are dispatched, ingestion goes on. */
  resume(id: string): Promise<void> {
    return this.#serial(() => this.#setPaused(id, false));
  }

  async #register(registration: Registration): Promise<RegistrationResult> {
    const { id } = registration;
    if (this.#o.backends.isConfigured(id)) throw configured(id);
    const previous = this.#entries.get(id);
    if (!previous && this.#entries.size >= MAX_REGISTERED_SERVICES) {
      throw new ProtoError('CONFLICT', `the registry holds ${MAX_REGISTERED_SERVICES} services already`, { limit: MAX_REGISTERED_SERVICES });
    }
    if (registration.endpoint !== undefined) await this.#o.guard.check(registration.endpoint);
    const now = new Date().toISOString();
    const entry: RegisteredService = { ...registration, registeredAt: previous?.registeredAt ?? now, updatedAt: now };
    await this.#o.store.put(entry);
    this.#entries.set(id, entry);
    await this.#replaceBackend(previous, entry);
    this.#o.metrics.changed(previous ? 'updated' : 'created');
    this.#o.logger.info({ service: id, endpoint: entry.endpoint !== undefined, created: !previous }, 'service registered');
    return { created: !previous, descriptor: this.get(id) };
  }

  /** A backend is rebuilt only when what it is built from changed (its address or its service entry). */
  async #replaceBackend(previous: RegisteredService | undefined, next: RegisteredService): Promise<void> {
    const built = (e: RegisteredService | undefined) => e && e.endpoint !== undefined && JSON.stringify(runtimeBackend(e));
    if (built(previous) === built(next)) return;
    const paused = this.#o.backends.isPaused(next.id);
    if (previous?.endpoint !== undefined) await this.#o.backends.remove(next.id);
    if (next.endpoint !== undefined) await this.#o.backends.add(runtimeBackend(next), { paused });
  }

  async #remove(id: string): Promise<void> {
    if (this.#o.backends.isConfigured(id)) throw configured(id);
    const entry = this.#entries.get(id);
    if (!entry) throw notFound(id);
    await this.#o.store.delete(id);
    this.#entries.delete(id);
    if (entry.endpoint !== undefined) await this.#removeBackend(entry);
    const subscriptions = await this.#o.onRemoved(id);
    this.#o.metrics.changed('deleted');
    this.#o.logger.info({ service: id, subscriptions }, 'service removed');
  }

  /**
   * Removes a deleted service's backend and ends its undelivered commands. Every replica does it
   * when it learns of the deletion, so a command a lagging replica accepted in the meantime ends too.
   */
  async #removeBackend(entry: RegisteredService): Promise<void> {
    await this.#o.backends.remove(entry.id);
    const abandoned = await this.#o.abandonCommands?.(entry.id, runtimeBackend(entry).source).catch((err: unknown) => {
      this.#o.logger.warn({ err, service: entry.id }, 'could not end the commands of a removed service; they are ended when it is next removed');
      return 0;
    });
    if (abandoned) this.#o.logger.info({ service: entry.id, commands: abandoned }, 'undelivered commands of a removed service failed with SERVICE_NOT_FOUND');
  }

  async #setPaused(id: string, paused: boolean): Promise<void> {
    if (!this.#o.backends.get(id)) {
      if (this.#entries.has(id)) throw new ProtoError('CONFLICT', `service "${id}" has no endpoint: there is nothing to ${paused ? 'pause' : 'resume'}`);
      throw notFound(id);
    }
    if (this.#o.backends.isPaused(id) === paused) return;
    await this.#o.store.setPaused(id, paused);
    if (paused) this.#o.backends.pause(id);
    else this.#o.backends.resume(id);
    this.#o.metrics.changed(paused ? 'paused' : 'resumed');
    this.#o.logger.info({ service: id }, paused ? 'service paused' : 'service resumed');
  }

  /**
   * Re-reads the store and applies what another replica changed: services registered, replaced or
   * removed there, and pause marks. The replica that made a change already applied it, so for it
   * this finds nothing to do. A removed service's subscriptions were deleted by the replica that
   * removed it (they are in the shared store); only the local backend goes.
   */
  sync(): Promise<void> {
    return this.#serial(() => this.#sync());
  }

  async #sync(): Promise<void> {
    const [stored, paused] = await Promise.all([this.#o.store.list(), this.#o.store.pausedIds()]);
    const byId = new Map(stored.filter((entry) => !this.#o.backends.isConfigured(entry.id)).map((entry) => [entry.id, entry]));
    for (const [id, entry] of [...this.#entries]) {
      if (byId.has(id)) continue;
      this.#entries.delete(id);
      if (entry.endpoint !== undefined) await this.#removeBackend(entry);
      this.#o.logger.info({ service: id }, 'service removed on another replica');
    }
    const pausedIds = new Set(paused);
    for (const entry of byId.values()) {
      const previous = this.#entries.get(entry.id);
      if (previous && JSON.stringify(previous) === JSON.stringify(entry)) continue;
      this.#entries.set(entry.id, entry);
      if (entry.endpoint !== undefined && !(await this.#stillAllowed(entry))) {
        if (previous?.endpoint !== undefined) await this.#o.backends.remove(entry.id);
        continue;
      }
      if (!this.#o.backends.get(entry.id) && entry.endpoint !== undefined) await this.#o.backends.add(runtimeBackend(entry), { paused: pausedIds.has(entry.id) });
      else await this.#replaceBackend(previous, entry);
      this.#o.logger.info({ service: entry.id, created: !previous }, 'service registered on another replica');
    }
    for (const backend of this.#o.backends.list()) {
      if (pausedIds.has(backend.id) && !this.#o.backends.isPaused(backend.id)) this.#o.backends.pause(backend.id);
      else if (!pausedIds.has(backend.id) && this.#o.backends.isPaused(backend.id)) this.#o.backends.resume(backend.id);
    }
  }

  /** Runs `work` after every change queued before it. */
  #serial<T>(work: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(work);
    this.#queue = result.catch(() => undefined);
    return result;
  }
}

/** The proto backend configuration of a registered service with an endpoint. */
export function runtimeBackend(entry: RegisteredService): ProtoBackendConfig {
  const config: ProtoBackendConfig = {
    kind: 'proto',
    id: entry.id,
    url: String(entry.endpoint).replace(/\/+$/, ''),
    service: entry.name,
    source: `urn:proto-gateway:${entry.id}`,
    circuit: { ...RUNTIME_BACKEND.circuit },
    headers: {},
    forwardIdentity: 'none',
    refreshMs: RUNTIME_BACKEND.refreshMs,
    events: { ...RUNTIME_BACKEND.events },
  };
  if (entry.description !== undefined) config.description = entry.description;
  if (entry.version !== undefined) config.version = entry.version;
  return config;
}

function notFound(id: string): ProtoError {
  return new ProtoError('SERVICE_NOT_FOUND', `no service "${id}"`, { serviceId: id });
}

function configured(id: string): ProtoError {
  return new ProtoError('CONFLICT', `service "${id}" is declared in the configuration file; change it there`, { serviceId: id });
}
