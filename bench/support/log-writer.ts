/**
 * The child of `log-destination.bench.ts`: logs access lines as `proto-gateway serve` does (a child
 * logger per request, one `info` line each) at `BENCH_LOG_RATE` lines per second, `BENCH_LOG_PER_TURN`
 * per turn of the event loop, for `BENCH_LOG_SECONDS`, into the destination named by argv[2]:
 * `serve` (`stdoutLog`, what the gateway uses), `pino` (pino's default asynchronous destination on
 * stdout) or `none` (lines built, nothing written). The turns spin on `setImmediate` between lines,
 * as a loaded gateway's do. Prints its CPU µs per line (all threads) as JSON on stderr.
 */
import pino from 'pino';
import { stdoutLog } from '../../src/stdout-log.ts';

const destinations = {
  serve: () => stdoutLog(),
  pino: () => pino.destination({ dest: 1, sync: false }),
  none: () => ({ write: (_line: string) => {} }),
};
const which = process.argv[2] as keyof typeof destinations;
const rate = Number(process.env.BENCH_LOG_RATE ?? 6000);
const perTurn = Number(process.env.BENCH_LOG_PER_TURN ?? 2);
const seconds = Number(process.env.BENCH_LOG_SECONDS ?? 5);
const log = pino({ base: { service: 'proto-gateway' } }, destinations[which]());
const cpu = process.cpuUsage();
const startedMs = Date.now();
let lines = 0;
const turn = (): void => {
  const due = Math.floor(((Date.now() - startedMs) / 1000) * rate);
  for (let n = 0; n < perTurn && lines < due; n++, lines++) {
    log.child({ reqId: `0b6f1e2a-5c4d-4e8f-9a1b-${String(lines).padStart(12, '0')}` }).info({ method: 'POST', path: '/commands', route: '/commands', status: 201, ms: 3 }, 'request');
  }
  if (Date.now() - startedMs < seconds * 1000) setImmediate(turn);
  else {
    const spent = process.cpuUsage(cpu);
    process.stderr.write(`${JSON.stringify({ lines, cpuMicrosPerLine: (spent.user + spent.system) / lines })}\n`);
  }
};
turn();
