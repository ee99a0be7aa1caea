/**
 * The current public manifest, rebuilt only when a backend's manifest changed or a backend was
 * added or removed at runtime (not per request).
 */
import type { AuthConfig } from '../config/types.ts';
import type { BackendDirectory } from '../backends/directory.ts';
import { aggregateManifest, backendManifest, type AggregateInput } from './aggregate.ts';
import { gatewayCapabilities, type CapabilitySpec } from './capabilities.ts';
import type { Manifest } from './types.ts';

export interface PublicManifestOptions {
  protocolVersion: string;
  gatewayVersion: string;
  publicUrl: string;
  auth: AuthConfig;
  /** With `auth.type: oauth2`: the token endpoint to advertise, once known (call `invalidate()` when it becomes known). */
  tokenUrl?: () => string | undefined;
  capabilities: CapabilitySpec[];
  backends: BackendDirectory;
  /**
   * Whether a backend's services appear (per-caller catalogues: a backend with `access` is not
   * everyone's, so the public manifest leaves it out); absent = every backend.
   */
  listed?: (backendId: string) => boolean;
  /** The gateway's other transports, as advertised in its service entry (gRPC, A2A, MCP); read when the manifest is built. */
  transports?: () => AggregateInput['transports'];
}

export class PublicManifest {
  readonly #options: PublicManifestOptions;
  #cached: Manifest | undefined;
  readonly #scoped = new Map<string, Manifest>();
  /** Unsubscribers of the proto backends' change listeners, by backend id. */
  readonly #following = new Map<string, () => void>();

  constructor(options: PublicManifestOptions) {
    this.#options = options;
    for (const backend of options.backends.proto()) this.#following.set(backend.id, backend.onChange(() => this.invalidate()));
    options.backends.watch({
      added: (backend) => {
        if (backend.kind === 'proto') this.#following.set(backend.id, backend.onChange(() => this.invalidate()));
        this.invalidate();
      },
      replaced: (previous, next) => {
        this.#following.get(previous.id)?.();
        this.#following.delete(previous.id);
        if (next.kind === 'proto') this.#following.set(next.id, next.onChange(() => this.invalidate()));
        this.invalidate();
      },
      removed: (backend) => {
        this.#following.get(backend.id)?.();
        this.#following.delete(backend.id);
        this.invalidate();
      },
    });
  }

  /** The aggregated manifest. */
  current(): Manifest {
    const o = this.#options;
    this.#cached ??= aggregateManifest({
      protocolVersion: o.protocolVersion,
      gatewayVersion: o.gatewayVersion,
      publicUrl: o.publicUrl,
      auth: o.auth,
      tokenUrl: o.tokenUrl?.(),
      capabilities: gatewayCapabilities(o.capabilities, o.publicUrl),
      backends: o.backends.list().filter((backend) => o.listed?.(backend.id) ?? true),
      transports: o.transports?.(),
    });
    return this.#cached;
  }

  /** One backend's part, or undefined for an unknown id. */
  forBackend(id: string): Manifest | undefined {
    const backend = this.#options.backends.get(id);
    if (!backend) return undefined;
    let manifest = this.#scoped.get(id);
    if (!manifest) {
      manifest = backendManifest(backend, { ...this.#options, tokenUrl: this.#options.tokenUrl?.() });
      this.#scoped.set(id, manifest);
    }
    return manifest;
  }

  /** The gateway's own capability specs (for the spec pages). */
  get capabilities(): CapabilitySpec[] {
    return this.#options.capabilities;
  }

  /** Forgets the cached copies; the next read rebuilds them. */
  invalidate(): void {
    this.#cached = undefined;
    this.#scoped.clear();
  }
}
