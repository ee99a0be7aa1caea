/**
 * A backend that speaks the protocol. It reads `{url}/.well-known/proto` at start-up and every
 * `refresh`, keeps the last good copy, and knows its current `{endpoint}` (DESIGN.md, Conventions:
 * Backend URLs). A backend that is down does not stop the gateway; it is retried at every refresh.
 */
import type { BackendConnections } from '../egress/pinned-connections.ts';
import type { Logger } from 'pino';
import type { ProtoBackendConfig } from '../config/types.ts';
import { createUrlRewriter, joinUrl, withSlash, type UrlRewriter } from '../manifest/rewrite.ts';
import type { Manifest, ServiceEntry } from '../manifest/types.ts';
import { getJson } from './backend-http.ts';
import { CircuitBreaker } from './circuit-breaker.ts';

/** How long one manifest read may take; a slow backend is treated as down for that refresh. */
const MANIFEST_TIMEOUT_MS = 5_000;

export type BackendListener = () => void;

/** Options of a proto backend beyond its configuration. */
export interface ProtoBackendOptions {
  /**
   * Accept the manifest's `http.endpoint` only on the configured URL's own origin (runtime
   * backends: their URL passed the SSRF guard, an endpoint elsewhere did not). Default false.
   */
  sameOriginEndpoint?: boolean;
  /** Pinned connections (runtime backends: `pinned-connections.ts`); default the process-wide pools. */
  connections?: BackendConnections;
}

export class ProtoBackend {
  readonly kind = 'proto';
  /** Shared by dispatch, queries and the pass-through. */
  readonly circuit: CircuitBreaker;
  readonly config: ProtoBackendConfig;
  /** `{publicUrl}services/{id}/`. */
  readonly publicBase: string;
  #manifest: Manifest | undefined;
  #lastError: string | undefined;
  #timer: NodeJS.Timeout | undefined;
  #listeners = new Set<BackendListener>();
  #rewriter: UrlRewriter;
  readonly #log: Logger;
  readonly #sameOriginEndpoint: boolean;

  constructor(config: ProtoBackendConfig, publicUrl: string, logger: Logger, options: ProtoBackendOptions = {}) {
    this.config = config;
    this.#sameOriginEndpoint = options.sameOriginEndpoint ?? false;
    this.connections = options.connections;
    this.circuit = new CircuitBreaker({ failures: config.circuit.failures, cooldownMs: config.circuit.cooldownMs });
    this.publicBase = `${publicUrl}services/${config.id}/`;
    this.#log = logger.child({ backend: config.id });
    this.#rewriter = createUrlRewriter([config.url], this.publicBase);
  }

  /** The connections every outbound call to this backend uses; undefined = the default pools. */
  readonly connections: BackendConnections | undefined;

  get id(): string {
    return this.config.id;
  }

  /** The last good manifest, or undefined while none has been read. */
  get manifest(): Manifest | undefined {
    return this.#manifest;
  }

  /** Why the last read failed, or undefined after a good read. */
  get lastError(): string | undefined {
    return this.#lastError;
  }

  /** Rewrites any backend address in a string to the public form. */
  get rewrite(): UrlRewriter {
    return this.#rewriter;
  }

  /** The base of every protocol path: its service's `http.endpoint`, or its `url` before a manifest was read. */
  endpoint(): string {
    const advertised = primaryService(this.#manifest)?.[1].http?.endpoint;
    if (advertised === undefined || (this.#sameOriginEndpoint && !sameOrigin(advertised, this.config.url))) return withSlash(this.config.url);
    return withSlash(advertised);
  }

  /** Calls `listener` after every refresh that changed the manifest. */
  onChange(listener: BackendListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Reads the manifest now, then every `refresh`. */
  async start(): Promise<void> {
    await this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.config.refreshMs);
  }

  /** Reads the manifest once; keeps the last good copy on failure. */
  async refresh(): Promise<void> {
    try {
      const answer = await getJson(joinUrl(this.config.url, '.well-known/proto'), {
        headers: this.config.headers,
        dispatcher: this.connections?.dispatcher,
        timeoutMs: Math.min(MANIFEST_TIMEOUT_MS, this.config.refreshMs),
      });
      if (answer.status !== 200 || !isManifest(answer.body)) throw new Error(`manifest answered ${answer.status} without a PROTO object`);
      this.#accept(answer.body);
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.#lastError) this.#log.warn({ err: message }, 'backend manifest unavailable; keeping the last good copy');
      this.#lastError = message;
    }
  }

  #accept(manifest: Manifest): void {
    const changed = JSON.stringify(manifest) !== JSON.stringify(this.#manifest);
    if (this.#lastError !== undefined) this.#log.info('backend manifest read');
    this.#lastError = undefined;
    if (!changed) return;
    this.#manifest = manifest;
    this.#rewriter = createUrlRewriter([this.config.url, this.endpoint()], this.publicBase);
    for (const listener of this.#listeners) listener();
  }

  /** Stops refreshing. Safe to call twice. */
  close(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * The service whose `http.endpoint` is the backend's endpoint: the first service that is not one
 * of the protocol's own (`io.proto.*`), else the first with an endpoint.
 */
export function primaryService(manifest: Manifest | undefined): [string, ServiceEntry] | undefined {
  if (!manifest) return undefined;
  const entries = Object.entries(manifest.PROTO.services ?? {}).filter(([, s]) => s?.http?.endpoint);
  return entries.find(([name]) => !name.startsWith('io.proto.')) ?? entries[0];
}

function sameOrigin(a: string, b: string): boolean {
  return URL.canParse(a) && new URL(a).origin === new URL(b).origin;
}

function isManifest(body: unknown): body is Manifest {
  const proto = (body as Manifest | undefined)?.PROTO;
  return !!proto && typeof proto === 'object' && typeof proto.services === 'object' && proto.services !== null;
}
