/**
 * `server.watchConfig: true`: reloads when the configuration file's content changes.
 *
 * The directory holding the file is watched (`fs.watch`, inotify on Linux), not the file: editors
 * replace a file by renaming a new one over it, and a Kubernetes ConfigMap volume replaces it
 * through a symlink swap (`gateway.yaml -> ..data/gateway.yaml`, and `..data` is renamed to point
 * at a new timestamped directory), so a watch on the file itself would keep following the old inode
 * and never fire again. Any event in the directory schedules a look (debounced, `debounceMs`); the
 * look reads the file through its symlinks and reloads only when the content's hash changed, so
 * unrelated files, touches and the several events of one swap cause one reload at most.
 *
 * A hand-written watcher rather than chokidar: the one case that matters (a symlinked file whose
 * link target is swapped) is exactly what file-level watchers miss, and the directory watch with a
 * content hash is a dozen lines with no polling.
 */
import { createHash } from 'node:crypto';
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from 'pino';

/** Default quiet time after the last event before the file is read, in ms. */
export const WATCH_DEBOUNCE_MS = 250;

/** What the watcher needs. */
export interface ConfigWatcherOptions {
  file: string;
  /** Called when the content changed (the reloader serialises reloads itself). */
  onChange(): void;
  logger: Logger;
  debounceMs?: number;
}

/** Watches the configuration file's directory (a component: `start`, `close`). */
export class ConfigWatcher {
  readonly #o: ConfigWatcherOptions;
  #watcher: FSWatcher | undefined;
  #timer: NodeJS.Timeout | undefined;
  #hash: string | undefined;
  #closed = false;

  constructor(options: ConfigWatcherOptions) {
    this.#o = options;
  }

  /** Remembers the current content and starts watching. */
  async start(): Promise<void> {
    this.#hash = await this.#read();
    if (this.#closed) return;
    this.#watcher = watch(dirname(this.#o.file), { persistent: false }, () => this.#schedule());
    this.#watcher.on('error', (err) => this.#o.logger.error({ err, file: this.#o.file }, 'configuration watch failed; SIGHUP still reloads'));
    this.#o.logger.info({ file: this.#o.file }, 'watching the configuration file');
  }

  /** Stops watching. Idempotent. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#watcher?.close();
    this.#watcher = undefined;
  }

  #schedule(): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => void this.#look(), this.#o.debounceMs ?? WATCH_DEBOUNCE_MS);
    this.#timer.unref();
  }

  async #look(): Promise<void> {
    const hash = await this.#read();
    // Missing for a moment (mid-swap) or unchanged: nothing to do; the next event looks again.
    if (this.#closed || hash === undefined || hash === this.#hash) return;
    this.#hash = hash;
    this.#o.onChange();
  }

  /** The SHA-256 of the file's content (through its symlinks), or undefined when it cannot be read now. */
  async #read(): Promise<string | undefined> {
    try {
      return createHash('sha256').update(await readFile(this.#o.file)).digest('hex');
    } catch {
      return undefined;
    }
  }
}
