/**
 * The destination of `proto-gateway serve`'s JSON log lines: stdout, the lines waiting handed over
 * together `FLUSH_MS` after the first of them, or at once when `CHUNK_CHARS` wait. Under load that
 * is one write for the access lines of many requests, across many turns of the event loop (issue 29,
 * `bench/log-destination.bench.ts`: a write per line or per turn cost 8–10 µs of CPU per line).
 *
 * Writes never block the event loop on a stdout nobody reads: a pipe or a socket is non-blocking
 * (as Node sets it up for `process.stdout`), each chunk goes out with a `writeSync` that takes what
 * stdout takes at once, and what a full stdout refuses is tried again every `RETRY_MS`, so a reader
 * that pauses between reads loses no throughput (sonic-boom, pino's destination, tried again every
 * 100 ms: about 64 KiB per 100 ms through a briefly full pipe). The written bytes are counted
 * exactly, so a partial write is continued where it stopped: no line is cut, none written twice.
 *
 * A stdout that is not read costs bounded memory: at most `MAX_HELD_BYTES` of lines are held; the
 * lines beyond are dropped, counted (`droppedLines`), and reported once stdout takes writes again
 * (`onDropped`: `serve` logs a warning and counts them in `proto_gateway_stdout_lines_dropped_total`).
 * A stdout that is closed (EPIPE) drops every line from then on, counted the same way. At exit,
 * everything held is written synchronously while stdout takes something, then the warning about
 * drops if any, and given up once it has taken nothing for `EXIT_WRITE_MS` or after
 * `EXIT_WRITE_MAX_MS` in all. A file or a terminal stays as it is (a terminal paused with
 * Ctrl-S blocks, as `process.stdout` does).
 */
import { writeSync } from 'node:fs';

/** How long a line may wait for the lines after it before they are written together, in ms. */
export const FLUSH_MS = 10;

/** Characters of lines waiting that are handed over at once, without waiting for `FLUSH_MS`. */
export const CHUNK_CHARS = 8 * 1024;

/** Bytes of lines held while stdout does not take them (a pipe nobody reads); the lines beyond are dropped. */
export const MAX_HELD_BYTES = 16 * 1024 * 1024;

/** How often a full stdout is tried again, in ms. */
export const RETRY_MS = 10;

/** How long the exit keeps trying a stdout that takes nothing (no byte written meanwhile), in ms. */
export const EXIT_WRITE_MS = 1_000;

/** How long the exit writes to a stdout that takes little, in ms at most (a signal cannot end a synchronous write). */
export const EXIT_WRITE_MAX_MS = 5_000;

/** Options of `stdoutLog`. */
export interface StdoutLogOptions {
  /** How long a line waits for the lines after it, in ms; default `FLUSH_MS`. */
  flushMs?: number;
  /** Bytes held while stdout takes nothing; default `MAX_HELD_BYTES`. */
  maxHeldBytes?: number;
  /** Told, once stdout takes writes again, how many lines were dropped since the last report. */
  onDropped?: (lines: number) => void;
}

/** A pino destination (anything with `write(line)`) on stdout, with the count of lines it dropped. */
export interface StdoutLog {
  write(line: string): void;
  /** Lines dropped since the process started (stdout closed, or it did not take them while `maxHeldBytes` were held). */
  droppedLines(): number;
}

export function stdoutLog(options: StdoutLogOptions = {}): StdoutLog {
  const flushMs = options.flushMs ?? FLUSH_MS;
  // Node sets fd 1 up for `process.stdout`: a pipe or a socket becomes non-blocking, so a full one
  // refuses a write instead of holding the event loop until somebody reads.
  void process.stdout.writable;
  const out = new HeldOutput(options.maxHeldBytes ?? MAX_HELD_BYTES, options.onDropped);
  let pending: string[] = [];
  let chars = 0;
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    chars = 0;
    out.write(text);
  };
  process.once('exit', () => {
    flush();
    // Then the warning about lines dropped, if writing them out told of some.
    if (out.drainBeforeExit()) {
      flush();
      out.drainBeforeExit();
    }
  });
  return {
    write(line) {
      pending.push(line);
      chars += line.length;
      if (chars >= CHUNK_CHARS) flush();
      // Unref'd: waiting lines never keep the process alive (the exit handler writes them).
      else timer ??= setTimeout(flush, flushMs).unref();
    },
    droppedLines: () => out.dropped,
  };
}

/** The errors of a write that say stdout is gone for good (its reader closed it, fd 1 is not open, a terminal hung up). */
const CLOSED = new Set(['EPIPE', 'EBADF', 'EIO']);

/** The chunks handed to stdout and not yet taken, oldest first, written with `writeSync`s that take what stdout takes at once. */
class HeldOutput {
  readonly #maxHeld: number;
  readonly #onDropped: ((lines: number) => void) | undefined;
  readonly #chunks: Buffer[] = [];
  /** Bytes of the oldest chunk already written. */
  #offset = 0;
  #held = 0;
  #retry: NodeJS.Timeout | undefined;
  /** stdout refused for good (closed): every line is dropped from then on. */
  #closed = false;
  dropped = 0;
  #unreported = 0;

  constructor(maxHeld: number, onDropped?: (lines: number) => void) {
    this.#maxHeld = maxHeld;
    this.#onDropped = onDropped;
  }

  write(text: string): void {
    const bytes = Buffer.from(text);
    // One chunk is always taken (a line longer than the bound still goes out while stdout takes it).
    if (this.#closed || (this.#held > 0 && this.#held + bytes.length > this.#maxHeld)) {
      this.#drop([bytes]);
      return;
    }
    this.#chunks.push(bytes);
    this.#held += bytes.length;
    if (this.#retry === undefined) this.#drain();
  }

  /**
   * At exit: writes what is held while stdout takes something, and gives the rest up once it has
   * taken nothing for `EXIT_WRITE_MS`, or after `EXIT_WRITE_MAX_MS` in all; true when all was written.
   */
  drainBeforeExit(): boolean {
    clearTimeout(this.#retry);
    this.#retry = undefined;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    const endMs = Date.now() + EXIT_WRITE_MAX_MS;
    let left = this.#held;
    let giveUpMs = Date.now() + EXIT_WRITE_MS;
    while (!this.#writeNow()) {
      if (this.#held < left) {
        left = this.#held;
        giveUpMs = Date.now() + EXIT_WRITE_MS;
      }
      if (Date.now() >= Math.min(giveUpMs, endMs)) return false;
      Atomics.wait(pause, 0, 0, RETRY_MS);
    }
    return true;
  }

  #drain(): void {
    if (this.#writeNow()) return;
    // `??=`: a drain that the report of drops started meanwhile (onDropped → a log line → write) may have set it.
    this.#retry ??= setTimeout(() => {
      this.#retry = undefined;
      this.#drain();
    }, RETRY_MS).unref();
  }

  /** Writes the chunks held until stdout refuses; true when none is left. Then tells of the lines dropped before, if stdout took something. */
  #writeNow(): boolean {
    const before = this.#held;
    const done = this.#writeHeld();
    if (this.#held < before) this.#report();
    return done;
  }

  #writeHeld(): boolean {
    while (this.#chunks.length > 0) {
      const chunk = this.#chunks[0];
      let written: number;
      try {
        written = writeSync(1, chunk, this.#offset);
      } catch (err) {
        // Full (EAGAIN), or anything but closed: tried again later (held within the bound meanwhile).
        if (!CLOSED.has((err as NodeJS.ErrnoException).code ?? '')) return false;
        // Closed: what is held is dropped, and every line after it.
        this.#closed = true;
        this.#drop([chunk.subarray(this.#offset), ...this.#chunks.slice(1)]);
        this.#chunks.length = 0;
        this.#offset = 0;
        this.#held = 0;
        return true;
      }
      this.#offset += written;
      this.#held -= written;
      if (this.#offset === chunk.length) {
        this.#chunks.shift();
        this.#offset = 0;
      }
    }
    return true;
  }

  #drop(chunks: Buffer[]): void {
    let lines = 0;
    for (const chunk of chunks) for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, at + 1)) lines++;
    this.dropped += lines;
    this.#unreported += lines;
  }

  /** stdout took a write: the lines dropped before it are told. */
  #report(): void {
    if (this.#unreported === 0 || this.#closed) return;
    const lines = this.#unreported;
    this.#unreported = 0;
    try {
      this.#onDropped?.(lines);
    } catch {
      // A report that fails must not take the log down with it (nor the write that triggered it).
    }
  }
}
