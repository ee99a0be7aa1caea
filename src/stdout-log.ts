/**
 * The destination of `proto-gateway serve`'s JSON log lines: stdout, the lines logged in one turn
 * of the event loop handed over together, once the turn's other work is done. Under load that is
 * one write for many requests' lines instead of one per line (pino's default destination hands
 * every line to the thread pool on its own); an idle gateway's line still leaves in the turn that
 * logged it. Writes stay asynchronous, as pino's default: a stdout that is not read (a stalled
 * pipe) never blocks the event loop. Lines pending when the process exits are written first.
 */
import pino from 'pino';

/** A pino destination (anything with `write(line)`) on stdout, handed one write per turn. */
export function stdoutLog(): { write(line: string): void } {
  const stdout = pino.destination({ dest: 1, sync: false });
  let pending: string[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    stdout.write(text);
  };
  process.once('exit', () => {
    flush();
    stdout.flushSync();
  });
  return {
    write(line) {
      if (pending.push(line) === 1) setImmediate(flush);
    },
  };
}
