/**
 * Runs every benchmark under bench/ (`*.bench.ts`), in name order, each in its own process on this
 * same Node, so one benchmark's heap, sockets and JIT state never colour the next one's numbers.
 *
 *   npm run bench                       the full run (BENCHMARKS.md records one)
 *   npm run bench -- --quick            a short version of each, in under two minutes in all
 *   npm run bench -- --quick sse-fanout only the named benchmarks (file names without .bench.ts)
 *
 * `--quick` is passed through. Each benchmark prints its own tables and one `ratio` line per figure
 * and writes its JSON to bench/results/{name}.json (bench/support/report.ts); this runner then
 * writes bench/results/summary.json (machine, duration and exit code of each, their results) and
 * prints every `ratio` line again at the end. It exits 1 when a benchmark crashed, overran its time
 * limit or wrote no result.
 *
 * The benchmarks share one Redis: the one at `$PGW_TEST_REDIS_URL` (default 127.0.0.1:6379) when it
 * answers, otherwise a `redis-server` this runner starts on a free loopback port and stops at the end.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { TEST_REDIS_URL_ENV } from '../test/support/redis-server.ts';
import { benchRedis } from './support/redis.ts';
import { machine, resultsDir } from './support/report.ts';

/** Where the benchmarks are: this directory (`$BENCH_DIR` overrides it, for the runner's own test). */
const benchDir = process.env.BENCH_DIR ?? fileURLToPath(new URL('.', import.meta.url));
/** Time one benchmark may take before it is killed and counted as failed, in ms. */
const LIMIT_MS = { full: 30 * 60_000, quick: 3 * 60_000 };

interface Outcome {
  name: string;
  exitCode: number | null;
  signal: string | null;
  seconds: number;
  ratios: string[];
  result: unknown;
}

/** Runs one benchmark file; its stdout is shown as it comes and its `ratio` lines kept. */
function runOne(file: string, quick: boolean, dir: string): Promise<Outcome> {
  const name = file.replace(/\.bench\.ts$/, '');
  const resultFile = join(dir, `${name}.json`);
  rmSync(resultFile, { force: true });
  const started = performance.now();
  const args = ['--disable-warning=ExperimentalWarning', join(benchDir, file), ...(quick ? ['--quick'] : [])];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, BENCH_RESULTS_DIR: dir } });
  const ratios: string[] = [];
  let pending = '';
  child.stdout.on('data', (chunk: Buffer) => {
    process.stdout.write(chunk);
    pending += chunk.toString('utf8');
    const lines = pending.split('\n');
    pending = lines.pop() ?? '';
    for (const line of lines) if (line.startsWith('ratio ')) ratios.push(line);
  });
  const limit = setTimeout(() => {
    console.error(`bench: ${name} overran ${(quick ? LIMIT_MS.quick : LIMIT_MS.full) / 60_000} minutes; killing it`);
    child.kill('SIGKILL');
  }, quick ? LIMIT_MS.quick : LIMIT_MS.full);
  return new Promise((resolve) => {
    child.on('close', (exitCode, signal) => {
      clearTimeout(limit);
      const result = existsSync(resultFile) ? JSON.parse(readFileSync(resultFile, 'utf8')) : null;
      resolve({ name, exitCode, signal, seconds: (performance.now() - started) / 1000, ratios, result });
    });
  });
}

async function main(argv: string[]): Promise<number> {
  const quick = argv.includes('--quick');
  const only = argv.filter((arg) => !arg.startsWith('--'));
  const files = readdirSync(benchDir)
    .filter((file) => file.endsWith('.bench.ts'))
    .filter((file) => only.length === 0 || only.includes(file.replace(/\.bench\.ts$/, '')))
    .sort();
  if (files.length === 0) {
    console.error(`bench: no benchmark matches ${only.join(', ')}`);
    return 2;
  }
  // One Redis for the whole run (found, or started here when nothing answers), named to each benchmark.
  const redis = await benchRedis();
  process.env[TEST_REDIS_URL_ENV] = redis.url;
  try {
    return await runAll(files, quick);
  } finally {
    await redis.stop();
  }
}

async function runAll(files: string[], quick: boolean): Promise<number> {
  const dir = resultsDir();
  mkdirSync(dir, { recursive: true });
  const startedAt = new Date().toISOString();
  const outcomes: Outcome[] = [];
  for (const file of files) {
    console.log(`\n=== ${file}${quick ? ' --quick' : ''} ===`);
    outcomes.push(await runOne(file, quick, dir));
  }
  const failed = outcomes.filter((o) => o.exitCode !== 0 || o.result === null);
  writeFileSync(join(dir, 'summary.json'), `${JSON.stringify({ quick, startedAt, finishedAt: new Date().toISOString(), machine: machine(), benchmarks: outcomes }, null, 2)}\n`);
  console.log(`\n=== ratios (gateway / baseline measured in the same run${quick ? ', --quick' : ''}) ===`);
  for (const outcome of outcomes) for (const line of outcome.ratios) console.log(line);
  console.log(`\n${outcomes.map((o) => `${o.name} ${o.seconds.toFixed(0)} s`).join(', ')}; results in ${dir}`);
  for (const o of failed) console.error(`bench: ${o.name} failed (exit ${o.exitCode ?? o.signal}${o.result === null ? ', no result written' : ''})`);
  return failed.length > 0 ? 1 : 0;
}

process.exitCode = await main(process.argv.slice(2));
