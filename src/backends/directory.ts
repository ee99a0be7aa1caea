/**
 * The backends the gateway fronts, by id: the configured ones, built once from the configuration,
 * and proto backends registered at runtime (`POST /services`), added and removed while it runs.
 * It also holds their lifecycle state (paused or not).
 *
 * Dependents react to changes through `watch()`: a listener is told of every backend added,
 * removed, paused and resumed, and `add()`/`remove()` resolve once every listener has settled, so
 * a caller of `add()` sees the new backend's catalogues loaded and its ingestors running.
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
  /** A backend was added (not yet started when the directory itself is not started). */
  added?(backend: ProtoBackend): Promise<void> | void;
  /** A backend was removed (already closed). */
  removed?(backend: Backend): Promise<void> | void;
  /** A backend was paused. */
  paused?(backend: Backend): void;
  /** A backend was resumed. */
  resumed?(backend: Backend): void;
}

/** The backends by id, their lifecycle state, and the listeners of their changes. */
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
      const backend = config.kind === 'proto' ? new ProtoBackend(config, publicUrl, logger) : new LegacyBackend(config, publicUrl);
      this.#byId.set(config.id, backend);
      this.#configured.add(config.id);
    }
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
