/**
 * Correlation aliases with a live notice: wraps the store's `CorrelationAliases` and tells its
 * watchers each alias it remembers, so a stream already open with `correlationId=<command id>`
 * starts matching the backend's own id the moment the dispatcher learns it (SSE `closeOnTerminal`
 * then ends on the backend's terminal event). The store stays the durable source. On a store shared
 * by several replicas (`AliasNotices`: Redis pub/sub), `start()` also follows the aliases the other
 * replicas remember, so a stream open here follows an alias the dispatcher of another replica
 * learnt. A notice lost while the connection was down leaves the streams open at that moment
 * without the alias; a stream opened later reads every alias from the store.
 */
import { hasAliasNotices, type CorrelationAliases } from './CommandStore.ts';

/** Told each alias as it is remembered: `alias` now also correlates command `id`. */
export type AliasWatcher = (id: string, alias: string) => void;

/** `CorrelationAliases` that also notifies watchers. */
export class AliasNotifier implements CorrelationAliases {
  readonly #store: CorrelationAliases;
  readonly #watchers = new Set<AliasWatcher>();
  #stopNotices: (() => void) | undefined;

  constructor(store: CorrelationAliases) {
    this.#store = store;
  }

  /** Follows the aliases other replicas remember, when the store announces them. Idempotent. */
  async start(): Promise<void> {
    if (this.#stopNotices || !hasAliasNotices(this.#store)) return;
    this.#stopNotices = await this.#store.watchAliases((id, alias) => this.#tell(id, alias));
  }

  /** Stops following other replicas. Safe twice. */
  close(): void {
    this.#stopNotices?.();
    this.#stopNotices = undefined;
  }

  async rememberAlias(id: string, alias: string): Promise<void> {
    await this.#store.rememberAlias(id, alias);
    // At once here; other replicas hear it through the store's notice (watchers are idempotent).
    this.#tell(id, alias);
  }

  #tell(id: string, alias: string): void {
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
