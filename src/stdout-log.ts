/**
 * The destination of `proto-gateway serve`'s JSON log lines: stdout, written in chunks of
 * `CHUNK_CHARS`, or `FLUSH_MS` after the first line waiting, whichever comes first. Under load that
 * is one write for the access lines of many requests, across many turns of the event loop (issue 29,
 * `bench/log-destination.bench.ts`: about 2 µs of CPU per line written, where a write per turn cost
 * 8–9 µs in the event loop and the thread pool, and pino's default destination, which hands the
 * thread pool a write per line or per busy write, about 10). Writes stay asynchronous, as pino's
 * default: a stdout that is not read (a stalled pipe) never blocks the event loop. Lines waiting
 * when the process exits are written first (synchronously).
 */
import pino from 'pino';

/** How long a line may wait for the lines after it before they are written together, in ms. */
export const FLUSH_MS = 10;

/** Characters of lines that are written at once, without waiting for `FLUSH_MS`. */
export const CHUNK_CHARS = 8 * 1024;

/** A pino destination (anything with `write(line)`) on stdout, written in chunks; a line waits at most `flushMs`. */
export function stdoutLog(flushMs = FLUSH_MS): { write(line: string): void } {
  // Holds lines until CHUNK_CHARS are waiting (or a flush); its flushSync writes what it holds.
  const stdout = pino.destination({ dest: 1, sync: false, minLength: CHUNK_CHARS });
  let timer: NodeJS.Timeout | undefined;
  const flush = (): void => {
    timer = undefined;
    stdout.flush();
  };
  process.once('exit', () => {
    clearTimeout(timer);
    stdout.flushSync();
  });
  return {
    write(line) {
      stdout.write(line);
      // Unref'd: a waiting line never keeps the process alive (the exit handler writes it).
      timer ??= setTimeout(flush, flushMs).unref();
    },
  };
}
