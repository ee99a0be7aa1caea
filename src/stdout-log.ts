/**
 * The destination of `proto-gateway serve`'s JSON log lines: stdout, the lines logged in one turn
 * of the event loop written together, synchronously, once the turn's other work is done. Under
 * load that is one write(2) for many requests' lines instead of one per line (pino's default
 * destination hands every line to the thread pool on its own); an idle gateway's line still leaves
 * in the turn that logged it. Lines pending when the process exits are written first.
 */
import pino from 'pino';

/** A pino destination (anything with `write(line)`) on stdout, written once per turn. */
export function stdoutLog(): { write(line: string): void } {
  // Synchronous: a line is on its way when the turn ends, and `exit` handlers may still write.
  const stdout = pino.destination({ dest: 1, sync: true });
  let pending: string[] = [];
  const flush = (): void => {
    if (pending.length === 0) return;
    const text = pending.join('');
    pending = [];
    stdout.write(text);
  };
  process.once('exit', flush);
  return {
    write(line) {
      if (pending.push(line) === 1) setImmediate(flush);
    },
  };
}
