/**
 * When a catalogue re-reads the proto backends' own catalogues (commands, queries): at start, after
 * every manifest change of a backend, and every `refresh` of it; a backend registered at runtime (or
 * added by a reload) is read (and followed) as it is added, a removed one is forgotten, a replaced
 * one is followed anew (its entries stay until the new read installs its own). Concurrent reads of
 * one backend share one read.
 */
import type { BackendDirectory } from '../backends/directory.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';

/** What the refresher drives. */
export interface CatalogueRefresherOptions {
  backends: BackendDirectory;
  /** Reads one backend's catalogue and installs it; a failure is the reader's to log (never rejects). */
  read(backend: ProtoBackend): Promise<void>;
  /** Drops the entries of a removed backend. */
  forget(backendId: string): void;
}

/** The timers and subscriptions of one followed backend. */
interface Following {
  timer: NodeJS.Timeout;
  unsubscribe: () => void;
}

/** Drives the re-reads of one catalogue over every proto backend (see the module comment). */
export class CatalogueRefresher {
  readonly #options: CatalogueRefresherOptions;
  readonly #following = new Map<string, Following>();
  readonly #refreshing = new Map<string, Promise<void>>();
  readonly #unwatch: () => void;
  #started = false;
  #closed = false;

  constructor(options: CatalogueRefresherOptions) {
    this.#options = options;
    this.#unwatch = options.backends.watch({
      added: (backend) => (backend.kind === 'proto' && this.#started && !this.#closed ? this.#follow(backend) : undefined),
      replaced: (previous, next) => {
        this.#unfollow(previous.id);
        if (next.kind === 'proto' && this.#started && !this.#closed) return this.#follow(next);
        return undefined;
      },
      removed: (backend) => {
        this.#unfollow(backend.id);
        options.forget(backend.id);
      },
    });
  }

  /** True once `close()` was called (a read finishing late must not install anything). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Reads every proto backend now, then follows each. */
  async start(): Promise<void> {
    this.#started = true;
    await Promise.all(this.#options.backends.proto().map((backend) => this.#follow(backend)));
  }

  /** Reads one backend's catalogue now; concurrent calls share one read. */
  refresh(backend: ProtoBackend): Promise<void> {
    const running = this.#refreshing.get(backend.id);
    if (running) return running;
    const read = this.#options.read(backend).finally(() => this.#refreshing.delete(backend.id));
    this.#refreshing.set(backend.id, read);
    return read;
  }

  /** Stops following every backend and waits for reads in flight. Safe to call twice. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#unwatch();
    for (const id of [...this.#following.keys()]) this.#unfollow(id);
    await Promise.allSettled([...this.#refreshing.values()]);
  }

  async #follow(backend: ProtoBackend): Promise<void> {
    if (this.#following.has(backend.id)) return;
    this.#following.set(backend.id, {
      timer: setInterval(() => void this.refresh(backend), backend.config.refreshMs),
      unsubscribe: backend.onChange(() => void this.refresh(backend)),
    });
    await this.refresh(backend);
  }

  #unfollow(id: string): void {
    const following = this.#following.get(id);
    if (!following) return;
    clearInterval(following.timer);
    following.unsubscribe();
    this.#following.delete(id);
  }
}
