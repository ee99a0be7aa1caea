/**
 * The destination of `proto-gateway serve`'s JSON log lines: stdout, the lines waiting handed over
 * together `FLUSH_MS` after the first of them, or at once when `CHUNK_CHARS` wait. Under load that
 * is one write for the access lines of many requests, across many turns of the event loop (issue 29,
 * `bench/log-destination.bench.ts`: about 2 µs of CPU per line written, where a write per turn cost
 * 8–9 µs in the event loop and the thread pool, and pino's default destination, which hands the
 * thread pool a write per line or per busy write, about 10). Writes stay asynchronous, as pino's
 * default (which also gathers what comes while a write is in flight): a stdout that is not read (a
 * stalled pipe) never blocks the event loop. Lines waiting when the process exits are written
 * first, synchronously, after what the destination holds.
 */
import { writeSync } from 'node:fs';
import pino from 'pino';

/** How long a line may wait for the lines after it before they are written together, in ms. */
export const FLUSH_MS = 10;

/** Characters of lines waiting that are handed over at once, without waiting for `FLUSH_MS`. */
export const CHUNK_CHARS = 8 * 1024;

/** A pino destination (anything with `write(line)`) on stdout; a line waits at most `flushMs`. */
export function stdoutLog(flushMs = FLUSH_MS): { write(line: string): void } {
  const stdout = pino.destination({ dest: 1, sync: false });
  let pending: string[] = [];
  let chars = 0;
  let timer: NodeJS.Timeout | undefined;
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
  process.once('exit', () => {
    const text = Buffer.from(take());
    stdout.flushSync();
    try {
      for (let written = 0; written < text.length; ) written += writeSync(1, text, written);
    } catch {
      // stdout refuses (closed, or full and non-blocking): what it did not take is lost, the exit goes on.
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
  };
}
