/**
 * The backends the gateway fronts, by id: the configured ones, built once from the configuration,
 * and proto backends registered at runtime (`POST /services`), added and removed while it runs.
 * It also holds their lifecycle state (paused or not).
 *
 * Dependents react to changes through `watch()`: a listener is told of every backend added,
 * replaced, removed, paused and resumed, and `add()`/`remove()`/`reconfigure()` resolve once every
 * listener has settled, so a caller of `add()` sees the new backend's catalogues loaded and its
 * ingestors running.
 *
 * A configuration reload hands the configured backends over with `reconfigure()`: a backend whose
 * definition changed is replaced by a new one under the same id (its pause state, its outbox entries
 * and its ingestion checkpoints are the id's, so they carry over); runtime backends are untouched.
 */
import type { BackendConnections } from '../egress/pinned-connections.ts';
import type { Logger } from 'pino';
import type { BackendConfig, ProtoBackendConfig } from '../config/types.ts';
import { LegacyBackend } from './legacy-backend.ts';
import { ProtoBackend } from './proto-backend.ts';
import { ProtoError } from '../errors.ts';

/** A backend of either kind. */
export type Backend = ProtoBackend | LegacyBackend;

/** What a dependent may want to hear about; every method is optional and may be async. */
export interface DirectoryListener {
  /** A backend was added (not yet started when the directory itself is not started); a legacy one only by `reconfigure()`. */
  added?(backend: Backend): Promise<void> | void;
  /** A configured backend's definition changed: `next` (started) took the place of `previous` (closed), same id. */
  replaced?(previous: Backend, next: Backend): Promise<void> | void;
  /** A backend was removed (already closed). */
  removed?(backend: Backend): Promise<void> | void;
  /** A backend was paused. */
  paused?(backend: Backend): void;
  /** A backend was resumed. */
  resumed?(backend: Backend): void;
}

/** The backends by id, their lifecycle state, and the listeners of their changes. */
/** What `reconfigure()` changed, by backend id. */
export interface BackendChanges {
  added: string[];
  removed: Backend[];
  changed: string[];
}

export class BackendDirectory {
  readonly #byId = new Map<string, Backend>();
  readonly #configured = new Set<string>();
  readonly #paused = new Set<string>();
  readonly #listeners = new Set<DirectoryListener>();
  readonly #publicUrl: string;
  /** The pinned connections of runtime backends (every runtime backend shares them). */
  readonly #runtimeConnections: BackendConnections | undefined;
  readonly #logger: Logger;
  #started = false;

  constructor(configs: BackendConfig[], publicUrl: string, logger: Logger, runtimeConnections?: BackendConnections) {
    this.#publicUrl = publicUrl;
    this.#runtimeConnections = runtimeConnections;
    this.#logger = logger;
    for (const config of configs) {
      this.#byId.set(config.id, this.#build(config));
      this.#configured.add(config.id);
    }
  }

  #build(config: BackendConfig): Backend {
    return config.kind === 'proto' ? new ProtoBackend(config, this.#publicUrl, this.#logger) : new LegacyBackend(config, this.#publicUrl);
  }

  /** The backend with this id, or undefined. */
  get(id: string): Backend | undefined {
    return this.#byId.get(id);
  }

  /** The backend with this id; throws 404 `SERVICE_NOT_FOUND` for an unknown one (the `/services/{id}/…` routes). */
  require(id: string): Backend {
    const backend = this.#byId.get(id);
    if (!backend) throw new ProtoError('SERVICE_NOT_FOUND', `no service "${id}"`, { serviceId: id });
    return backend;
  }

  /** Every backend: the configured ones in configuration order, then the runtime ones by registration. */
  list(): Backend[] {
    return [...this.#byId.values()];
  }

  /** The protocol-speaking backends. */
  proto(): ProtoBackend[] {
    return this.list().filter((b): b is ProtoBackend => b.kind === 'proto');
  }

  /** The legacy backends. */
  legacy(): LegacyBackend[] {
    return this.list().filter((b): b is LegacyBackend => b.kind === 'legacy');
  }

  /** True when `id` is declared in the configuration file (never removable at runtime). */
  isConfigured(id: string): boolean {
    return this.#configured.has(id);
  }

  /** Tells `listener` of every later change; returns the function that stops it. */
  watch(listener: DirectoryListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * Adds a runtime proto backend (its manifest endpoint restricted to its own origin: it was
   * checked by the SSRF guard, the address its manifest names was not), paused from the start when
   * `options.paused`. Started at once when the directory is; resolves after every listener
   * settled. Throws when the id is taken.
   */
  async add(config: ProtoBackendConfig, options: { paused?: boolean } = {}): Promise<ProtoBackend> {
    if (this.#byId.has(config.id)) throw new Error(`backend ${config.id} exists`);
    const backend = new ProtoBackend(config, this.#publicUrl, this.#logger, { sameOriginEndpoint: true, connections: this.#runtimeConnections });
    this.#byId.set(config.id, backend);
    // Paused before anyone hears of it, so its ingestion never starts.
    if (options.paused) this.#paused.add(config.id);
    if (this.#started) await backend.start();
    await this.#tell((listener) => listener.added?.(backend), config.id);
    return backend;
  }

  /** Removes a runtime backend: closes it, then tells the listeners. False when unknown; throws for a configured one. */
  async remove(id: string): Promise<boolean> {
    if (this.#configured.has(id)) throw new Error(`backend ${id} is configured`);
    const backend = this.#byId.get(id);
    if (!backend) return false;
    this.#byId.delete(id);
    this.#paused.delete(id);
    if (backend.kind === 'proto') backend.close();
    await this.#tell((listener) => listener.removed?.(backend), id);
    return true;
  }

  /**
   * Takes a new list of configured backends (a configuration reload): the configured ones missing
   * from it are closed and removed, new ones are added, changed ones replaced; runtime backends stay.
   * Throws, changing nothing, when a new id is a runtime backend's. Resolves once every listener settled.
   */
  async reconfigure(configs: BackendConfig[]): Promise<BackendChanges> {
    const next = new Map(configs.map((config) => [config.id, config]));
    const taken = this.runtimeIdsAmong(configs);
    if (taken.length > 0) throw new Error(`backend ${taken.join(', ')} is registered at runtime; delete it before configuring it`);
    const changes: BackendChanges = { added: [], removed: [], changed: [] };
    for (const id of [...this.#configured].filter((id) => !next.has(id))) {
      const backend = this.#byId.get(id)!;
      this.#configured.delete(id);
      this.#byId.delete(id);
      this.#paused.delete(id);
      if (backend.kind === 'proto') backend.close();
      changes.removed.push(backend);
      await this.#tell((listener) => listener.removed?.(backend), id);
    }
    for (const config of configs) {
      const previous = this.#byId.get(config.id);
      if (previous && JSON.stringify(previous.config) === JSON.stringify(config)) continue;
      const backend = this.#build(config);
      this.#byId.set(config.id, backend);
      this.#configured.add(config.id);
      if (previous?.kind === 'proto') previous.close();
      if (this.#started && backend.kind === 'proto') await backend.start();
      if (previous) {
        changes.changed.push(config.id);
        await this.#tell((listener) => listener.replaced?.(previous, backend), config.id);
      } else {
        changes.added.push(config.id);
        await this.#tell((listener) => listener.added?.(backend), config.id);
      }
    }
    return changes;
  }

  /** The ids of `configs` that name a runtime backend (a reload cannot configure those). */
  runtimeIdsAmong(configs: BackendConfig[]): string[] {
    return configs.filter((config) => !this.#configured.has(config.id) && this.#byId.has(config.id)).map((config) => config.id);
  }

  /** True while `id` is paused (its commands wait in the outbox, its ingestion stands still). */
  isPaused(id: string): boolean {
    return this.#paused.has(id);
  }

  /** Pauses a backend (no-op when unknown or already paused). */
  pause(id: string): void {
    const backend = this.#byId.get(id);
    if (!backend || this.#paused.has(id)) return;
    this.#paused.add(id);
    for (const listener of this.#listeners) listener.paused?.(backend);
  }

  /** Resumes a paused backend (no-op otherwise). */
  resume(id: string): void {
    const backend = this.#byId.get(id);
    if (!backend || !this.#paused.delete(id)) return;
    for (const listener of this.#listeners) listener.resumed?.(backend);
  }

  /** Reads every proto backend's manifest (in parallel) and starts their refresh timers. */
  async start(): Promise<void> {
    this.#started = true;
    await Promise.all(this.proto().map((b) => b.start()));
  }

  /** Stops every refresh timer. Safe to call twice. */
  close(): void {
    this.#started = false;
    for (const backend of this.proto()) backend.close();
  }

  /** Runs `call` on every listener; a listener that fails is logged, never stops the others. */
  async #tell(call: (listener: DirectoryListener) => Promise<void> | void, id: string): Promise<void> {
    const results = await Promise.allSettled([...this.#listeners].map(async (listener) => call(listener)));
    for (const result of results) {
      if (result.status === 'rejected') this.#logger.error({ err: result.reason, backend: id }, 'a dependent could not follow a backend change');
    }
  }
}
