/**
 * The destination of `proto-gateway serve`'s JSON log lines: stdout, the lines waiting handed over
 * together `FLUSH_MS` after the first of them, or at once when `CHUNK_CHARS` wait. Under load that
 * is one write for the access lines of many requests, across many turns of the event loop (issue 29,
 * `bench/log-destination.bench.ts`: about 2 µs of CPU per line written, where a write per turn cost
 * 8–9 µs in the event loop and the thread pool, and pino's default destination, which hands the
 * thread pool a write per line or per busy write, about 10). Writes stay asynchronous, as pino's
 * default (which also gathers what comes while a write is in flight): a stdout that is not read (a
 * stalled pipe) never blocks the event loop. A pipe or a socket is non-blocking (as Node sets it up
 * for `process.stdout`, which the gateway did before this destination asked for it): a full one
 * refuses a write, and sonic-boom tries again every 100 ms.
 *
 * A stdout that is not read costs bounded memory: the destination holds at most `MAX_HELD_BYTES`
 * (UTF-8 bytes) of lines; the lines beyond are dropped, counted (`droppedLines`), and reported once
 * stdout takes writes again (`onDropped`: `serve` logs a warning and counts them in
 * `proto_gateway_stdout_lines_dropped_total`). At exit, what the destination holds is written
 * synchronously, then the lines waiting; a full stdout is tried again while it takes something, and
 * given up once it has taken nothing for `EXIT_WRITE_MS` (before, a stdout nobody read kept the
 * process from ever exiting).
 */
import { writeSync } from 'node:fs';
import pino from 'pino';

/** How long a line may wait for the lines after it before they are written together, in ms. */
export const FLUSH_MS = 10;

/** Characters of lines waiting that are handed over at once, without waiting for `FLUSH_MS`. */
export const CHUNK_CHARS = 8 * 1024;

/** Bytes of lines held while stdout does not take them (a pipe nobody reads); the lines beyond are dropped. */
export const MAX_HELD_BYTES = 16 * 1024 * 1024;

/** How long the exit keeps trying a stdout that takes nothing (no byte written meanwhile), in ms. */
export const EXIT_WRITE_MS = 1_000;

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
  /** Lines dropped since the process started (stdout did not take them and `maxHeldBytes` were held). */
  droppedLines(): number;
}

export function stdoutLog(options: StdoutLogOptions = {}): StdoutLog {
  const flushMs = options.flushMs ?? FLUSH_MS;
  // Node sets fd 1 up for `process.stdout`: a pipe or a socket becomes non-blocking (a file or a
  // terminal stays as it is), so a full one refuses a write instead of holding a thread of the pool,
  // or the exit, until somebody reads.
  void process.stdout.writable;
  // While the process runs, a full stdout is tried again for as long as it takes. At exit, only
  // while it takes something: the exit gives up once it has taken nothing for EXIT_WRITE_MS.
  let exiting = false;
  let giveUpMs = 0;
  let unwritten = Infinity;
  const keepTrying = (left: number): boolean => {
    if (!exiting) return true;
    if (left < unwritten) giveUpMs = Date.now() + EXIT_WRITE_MS;
    unwritten = left;
    return Date.now() < giveUpMs;
  };
  // Before every other exit listener, pino's own among them (it would flush the destination again,
  // and throw out of the exit when stdout is still full).
  process.prependOnceListener('exit', () => {
    exiting = true;
    const text = Buffer.from(take());
    try {
      stdout.flushSync();
      unwritten = Infinity;
      writeWhileTaken(text, keepTrying);
    } catch {
      // stdout refuses (closed, or took nothing for EXIT_WRITE_MS): what it did not take is lost, the exit goes on.
    }
    stdout.destroy();
  });
  const stdout = pino.destination({ dest: 1, sync: false, maxLength: options.maxHeldBytes ?? MAX_HELD_BYTES, retryEAGAIN: (_err, writing, after) => keepTrying(writing + after) });
  let pending: string[] = [];
  let chars = 0;
  let timer: NodeJS.Timeout | undefined;
  let dropped = 0;
  let unreported = 0;
  stdout.on('drop', (text: string) => {
    const lines = countLines(text);
    dropped += lines;
    unreported += lines;
  });
  // A write that went through: stdout is read again, and what was dropped meanwhile can be told.
  stdout.on('write', () => {
    if (unreported === 0) return;
    const lines = unreported;
    unreported = 0;
    options.onDropped?.(lines);
  });
  const take = (): string => {
    clearTimeout(timer);
    timer = undefined;
    const text = pending.join('');
    pending = [];
    chars = 0;
    return text;
  };
  const flush = (): void => {
    if (pending.length > 0) stdout.write(take());
  };
  return {
    write(line) {
      pending.push(line);
      chars += line.length;
      if (chars >= CHUNK_CHARS) flush();
      // Unref'd: waiting lines never keep the process alive (the exit handler writes them).
      else timer ??= setTimeout(flush, flushMs).unref();
    },
    droppedLines: () => dropped,
  };
}

/** Writes `bytes` to stdout synchronously; a full stdout is tried again every 10 ms while `keepTrying` (told what is left) says so, else this throws. */
function writeWhileTaken(bytes: Buffer, keepTrying: (left: number) => boolean): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  for (let written = 0; written < bytes.length; ) {
    try {
      written += writeSync(1, bytes, written);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || !keepTrying(bytes.length - written)) throw err;
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}

/** The lines of a chunk of JSON lines (each ends with a newline). */
function countLines(text: string): number {
  let lines = 0;
  for (let at = text.indexOf('\n'); at !== -1; at = text.indexOf('\n', at + 1)) lines++;
  return lines;
}
