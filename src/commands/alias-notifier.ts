/**
 * Correlation aliases with a live notice: wraps the store's `CorrelationAliases` and tells its
 * watchers each alias it remembers, so a stream already open with `correlationId=<command id>`
 * starts matching the backend's own id the moment the dispatcher learns it (SSE `closeOnTerminal`
 * then ends on the backend's terminal event). The store stays the durable source; watchers are
 * in-process (on Redis, a replica sees an alias remembered by another one when its streams open).
 */
import type { CorrelationAliases } from './CommandStore.ts';

/** Told each alias as it is remembered: `alias` now also correlates command `id`. */
export type AliasWatcher = (id: string, alias: string) => void;

/** `CorrelationAliases` that also notifies watchers. */
export class AliasNotifier implements CorrelationAliases {
  readonly #store: CorrelationAliases;
  readonly #watchers = new Set<AliasWatcher>();

  constructor(store: CorrelationAliases) {
    this.#store = store;
  }

  async rememberAlias(id: string, alias: string): Promise<void> {
    await this.#store.rememberAlias(id, alias);
    for (const watcher of this.#watchers) watcher(id, alias);
  }

  aliasesOf(id: string): Promise<string[]> {
    return this.#store.aliasesOf(id);
  }

  /** Adds a watcher; returns the function that removes it. */
  watch(watcher: AliasWatcher): () => void {
    this.#watchers.add(watcher);
    return () => void this.#watchers.delete(watcher);
  }
}
