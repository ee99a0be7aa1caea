/**
 * The backends the gateway fronts, by id: built once from the configuration.
 */
import type { Logger } from 'pino';
import type { BackendConfig } from '../config/types.ts';
import { LegacyBackend } from './legacy-backend.ts';
import { ProtoBackend } from './proto-backend.ts';

export type Backend = ProtoBackend | LegacyBackend;

export class BackendDirectory {
  readonly #byId = new Map<string, Backend>();

  constructor(configs: BackendConfig[], publicUrl: string, logger: Logger) {
    for (const config of configs) {
      const backend = config.kind === 'proto' ? new ProtoBackend(config, publicUrl, logger) : new LegacyBackend(config, publicUrl);
      this.#byId.set(config.id, backend);
    }
  }

  /** The backend with this id, or undefined. */
  get(id: string): Backend | undefined {
    return this.#byId.get(id);
  }

  /** Every backend, in configuration order. */
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

  /** Reads every proto backend's manifest (in parallel) and starts their refresh timers. */
  async start(): Promise<void> {
    await Promise.all(this.proto().map((b) => b.start()));
  }

  /** Stops every refresh timer. Safe to call twice. */
  close(): void {
    for (const backend of this.proto()) backend.close();
  }
}
