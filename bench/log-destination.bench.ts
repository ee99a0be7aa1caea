/**
 * What writing the access log costs per request (issue 29): a child process logs access lines as a
 * loaded gateway does (`bench/support/log-writer.ts`) into the destination `proto-gateway serve`
 * uses (`src/stdout-log.ts`: chunks, at most 10 ms late), into pino's default asynchronous stdout
 * destination (a write to the thread pool per line or per busy write), and into nothing; this
 * process reads their stdout all along, as a log collector does. A destination's cost is its CPU
 * per line minus the one that writes nothing (the spinning turns and the line's JSON are common).
 *
 * Run: `npx node bench/log-destination.bench.ts [--quick]` (BENCH_LOG_RATE, BENCH_LOG_PER_TURN).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BenchReport, sized } from './support/report.ts';

const writer = fileURLToPath(new URL('./support/log-writer.ts', import.meta.url));
const SECONDS = sized(5, 2);
const ROUNDS = sized(3, 1);

/** CPU µs per line of one child writing into `destination` (its stdout drained here). */
function measure(destination: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', writer, destination], {
      env: { ...process.env, BENCH_LOG_SECONDS: String(SECONDS) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let bytes = 0;
    let report = '';
    child.stdout.on('data', (chunk: Buffer) => (bytes += chunk.length));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (report += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      const line = report.split('\n').find((text) => text.startsWith('{'));
      if (code !== 0 || !line) return reject(new Error(`log writer (${destination}) exited ${code}: ${report}`));
      const { lines, cpuMicrosPerLine } = JSON.parse(line) as { lines: number; cpuMicrosPerLine: number };
      if (destination !== 'none' && bytes < lines * 100) return reject(new Error(`${destination}: ${bytes} bytes for ${lines} lines`));
      resolve(cpuMicrosPerLine);
    });
  });
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

const report = new BenchReport('log-destination');
const costs: Record<'serve' | 'pino', number[]> = { serve: [], pino: [] };
for (let round = 0; round < ROUNDS; round++) {
  // Interleaved, so a machine that drifts moves all three alike.
  const none = await measure('none');
  const pino = await measure('pino');
  const serve = await measure('serve');
  costs.pino.push(pino - none);
  costs.serve.push(serve - none);
  console.log(`round ${round + 1}: CPU µs per line beyond building it: serve destination ${(serve - none).toFixed(2)}, pino's default ${(pino - none).toFixed(2)} (no destination ${none.toFixed(1)})`);
}
report.add({ name: 'access log: CPU per line written', unit: 'µs', gateway: median(costs.serve), baseline: median(costs.pino), baselineName: "pino's default destination", better: 'lower' });
report.write();
