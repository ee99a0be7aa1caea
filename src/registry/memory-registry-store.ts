/**
 * The registry store in memory (`storage.driver: memory`): same behaviour as the SQLite store,
 * nothing kept across restarts.
 */
import type { RegisteredService, RegistryStore } from './RegistryStore.ts';

/** A `RegistryStore` in a Map (insertion order = registration order). */
export class MemoryRegistryStore implements RegistryStore {
  readonly #services = new Map<string, RegisteredService>();
  readonly #paused = new Set<string>();

  async open(): Promise<void> {}

  async list(): Promise<RegisteredService[]> {
    return [...this.#services.values()].map(copy);
  }

  async put(service: RegisteredService): Promise<void> {
    this.#services.set(service.id, copy(service));
  }

  async delete(id: string): Promise<boolean> {
    this.#paused.delete(id);
    return this.#services.delete(id);
  }

  async pausedIds(): Promise<string[]> {
    return [...this.#paused];
  }

  async setPaused(id: string, paused: boolean): Promise<void> {
    if (paused) this.#paused.add(id);
    else this.#paused.delete(id);
  }

  /** Nothing to release; safe to call twice. */
  async close(): Promise<void> {}
}

// Copies in and out (a JSON round trip, as the SQLite store does), so callers never share state.
function copy(service: RegisteredService): RegisteredService {
  return JSON.parse(JSON.stringify(service)) as RegisteredService;
}
