/**
 * SSE fan-out benchmark: the gateway's `GET /events/stream` against a minimal Node SSE broadcaster
 * (`node:http`, a Set of responses, one `res.write` per event) in the same run, on loopback.
 * Run with `node bench/sse-fanout.bench.ts [--quick]`. Not a test: it prints numbers and a `ratio`
 * line per figure, and writes `bench/results/sse-fanout.json` (bench/support/report.ts). `--quick`
 * runs 1000 subscribers only, for 2 s, with a burst a third the size.
 *
 * For each N subscribers (env SSE_BENCH_CONNECTIONS, default `1000,10000`) and each server:
 *
 * 1. memory per idle stream: server RSS and heap after GC with N streams open, minus before;
 * 2. paced: SSE_BENCH_RATE events/s (default 10) for SSE_BENCH_SECONDS (default 5): deliveries
 *    per second and latency p50/p99 from publish (the gateway: `log.append`) to receipt;
 * 3. burst: SSE_BENCH_BURST events back to back (default 300,000 / N): deliveries per second.
 *
 * Each server runs in a child process of its own (clean heap, `--expose-gc`), the clients in
 * another (raw TCP, see `sse-fanout/clients.ts`), so each side has N descriptors to itself: N must
 * fit `ulimit -n` (checked; capped with a note otherwise). Latency is sampled on about 500 streams
 * spread over the N. On a 2-core machine the client process competes with the server for a core,
 * equally for both servers, so the ratios mean more than the absolute numbers.
 */
import { execSync, fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { BenchReport, sized } from './support/report.ts';

const here = (file: string): string => fileURLToPath(new URL(file, import.meta.url));
const CONNECTIONS = (process.env.SSE_BENCH_CONNECTIONS ?? sized('1000,10000', '1000')).split(',').map(Number);
const RATE = Number(process.env.SSE_BENCH_RATE ?? 10);
const SECONDS = Number(process.env.SSE_BENCH_SECONDS ?? sized(5, 2));
/** Events of the burst phase, spread over the subscribers: this many deliveries in all. */
const BURST_DELIVERIES = sized(300_000, 100_000);
/** Streams whose latency is sampled, spread evenly. */
const LATENCY_SAMPLES = 500;
/** Whole-run bound: children are killed and the run fails after this. */
const RUN_LIMIT_MS = 15 * 60_000;
/** Descriptors kept free besides the streams (listeners, stdio, IPC, the store). */
const FD_HEADROOM = 64;

type Message = Record<string, any> & { type: string };
type Kind = 'baseline' | 'gateway';

interface Outcome {
  rssPerStream: number;
  heapPerStream: number;
  openMs: number;
  paced: Phase;
  burst: Phase;
}

interface Phase {
  deliveriesPerSecond: number;
  complete: number;
  p50?: number;
  p99?: number;
}

const children = new Set<ChildProcess>();

function start(file: string, args: string[]): ChildProcess {
  const child = fork(here(file), args, { execArgv: [...process.execArgv, '--expose-gc'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** The next message of `type` from `child`; an `error` message or an exit rejects. */
function next(child: ChildProcess, type: string): Promise<Message> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`child exited (${code}) while waiting for ${type}`));
    const onMessage = (message: Message): void => {
      if (message.type !== 'error' && message.type !== type) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      if (message.type === 'error') reject(new Error(message.message));
      else resolve(message);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.send({ type: 'stop' });
  await exited;
}

function percentile(sorted: number[], p: number): number | undefined {
  return sorted.length === 0 ? undefined : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Publishes `count` events (one per `intervalMs`) while the clients count them. */
async function phase(server: ChildProcess, clients: ChildProcess, count: number, intervalMs: number): Promise<Phase> {
  const timeoutMs = count * intervalMs + 30_000;
  const result = next(clients, 'result');
  clients.send({ type: 'expect', perStream: count, timeoutMs });
  const published = next(server, 'published');
  server.send({ type: 'publish', count, intervalMs });
  const [{ firstAt }, { received, complete, latencies, lastEventAt }] = await Promise.all([published, result]);
  const sorted = (latencies as number[]).sort((a, b) => a - b);
  return {
    deliveriesPerSecond: received / Math.max(0.001, (lastEventAt - firstAt) / 1000),
    complete,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}

async function run(kind: Kind, streams: number): Promise<Outcome> {
  const server = start('./sse-fanout/servers.ts', [kind]);
  const { url } = await next(server, 'listening');
  server.send({ type: 'memory' });
  const before = await next(server, 'memory');
  const clients = start('./sse-fanout/clients.ts', [url, String(streams), String(Math.max(1, Math.floor(streams / LATENCY_SAMPLES)))]);
  try {
    const { openMs } = await next(clients, 'ready');
    server.send({ type: 'memory' });
    const after = await next(server, 'memory');
    if (after.streams !== streams) throw new Error(`${kind}: ${after.streams} streams open, expected ${streams}`);
    const paced = await phase(server, clients, RATE * SECONDS, 1000 / RATE);
    const burst = await phase(server, clients, Number(process.env.SSE_BENCH_BURST ?? Math.max(5, Math.ceil(BURST_DELIVERIES / streams))), 0);
    return {
      rssPerStream: (after.rss - before.rss) / streams,
      heapPerStream: (after.heapUsed + after.external - before.heapUsed - before.external) / streams,
      openMs,
      paced,
      burst,
    };
  } finally {
    await stop(clients);
    await stop(server);
  }
}

function fdLimit(): number {
  try {
    return Number(execSync('ulimit -n', { shell: '/bin/sh' }).toString().trim()) || Infinity;
  } catch {
    return Infinity;
  }
}

const fixed = (value: number | undefined, digits = 1): string => (value === undefined ? 'n/a' : value.toFixed(digits));
const kib = (bytes: number): string => `${(bytes / 1024).toFixed(1)} KiB`;
const ratio = (gateway: number | undefined, baseline: number | undefined): string =>
  gateway === undefined || baseline === undefined || baseline === 0 ? 'n/a' : `${(gateway / baseline).toFixed(2)}x`;

const bench = new BenchReport('sse-fanout');

/** The `ratio` lines of one subscriber count (gateway against the minimal broadcaster). */
function addFigures(streams: number, { baseline: b, gateway: g }: Record<Kind, Outcome>): void {
  const figure = (name: string, unit: string, gateway: number | undefined, baseline: number | undefined, better: 'higher' | 'lower'): void => {
    if (gateway !== undefined && baseline !== undefined) bench.add({ name: `${streams} streams, ${name}`, unit, gateway, baseline, baselineName: 'minimal broadcaster', better });
  };
  figure('memory per idle stream (RSS)', 'KiB', g.rssPerStream / 1024, b.rssPerStream / 1024, 'lower');
  figure(`paced ${RATE}/s deliveries`, 'deliveries/s', g.paced.deliveriesPerSecond, b.paced.deliveriesPerSecond, 'higher');
  figure('paced latency p50', 'ms', g.paced.p50, b.paced.p50, 'lower');
  figure('paced latency p99', 'ms', g.paced.p99, b.paced.p99, 'lower');
  figure('burst deliveries', 'deliveries/s', g.burst.deliveriesPerSecond, b.burst.deliveriesPerSecond, 'higher');
  figure('burst latency p99', 'ms', g.burst.p99, b.burst.p99, 'lower');
}

function report(streams: number, outcomes: Record<Kind, Outcome>): void {
  const { baseline: b, gateway: g } = outcomes;
  const rows: Array<[string, string, string, string]> = [
    ['memory per idle stream (RSS)', kib(b.rssPerStream), kib(g.rssPerStream), ratio(g.rssPerStream, b.rssPerStream)],
    ['memory per idle stream (heap+ext)', kib(b.heapPerStream), kib(g.heapPerStream), ratio(g.heapPerStream, b.heapPerStream)],
    [`paced ${RATE}/s: deliveries/s`, fixed(b.paced.deliveriesPerSecond, 0), fixed(g.paced.deliveriesPerSecond, 0), ratio(g.paced.deliveriesPerSecond, b.paced.deliveriesPerSecond)],
    ['paced: latency p50 ms', fixed(b.paced.p50, 2), fixed(g.paced.p50, 2), ratio(g.paced.p50, b.paced.p50)],
    ['paced: latency p99 ms', fixed(b.paced.p99, 2), fixed(g.paced.p99, 2), ratio(g.paced.p99, b.paced.p99)],
    ['burst: deliveries/s', fixed(b.burst.deliveriesPerSecond, 0), fixed(g.burst.deliveriesPerSecond, 0), ratio(g.burst.deliveriesPerSecond, b.burst.deliveriesPerSecond)],
    ['burst: latency p99 ms', fixed(b.burst.p99, 1), fixed(g.burst.p99, 1), ratio(g.burst.p99, b.burst.p99)],
    ['streams that got every event', `${b.paced.complete}/${b.burst.complete}`, `${g.paced.complete}/${g.burst.complete}`, ''],
  ];
  console.log(`\n${streams} subscribers (opened in ${fixed(b.openMs, 0)} / ${fixed(g.openMs, 0)} ms)`);
  console.log(`${'metric'.padEnd(36)}${'baseline'.padStart(14)}${'gateway'.padStart(14)}${'gw/base'.padStart(10)}`);
  for (const [name, base, gw, r] of rows) console.log(`${name.padEnd(36)}${base.padStart(14)}${gw.padStart(14)}${r.padStart(10)}`);
}

async function main(): Promise<void> {
  const limit = fdLimit();
  console.log(`SSE fan-out: node ${process.version}, ulimit -n ${limit}, paced ${RATE} events/s for ${SECONDS}s, loopback`);
  for (const requested of CONNECTIONS) {
    const streams = Math.min(requested, limit - FD_HEADROOM);
    if (streams < requested) console.log(`note: ${requested} streams do not fit ulimit -n ${limit}; capped at ${streams}`);
    const outcomes = {} as Record<Kind, Outcome>;
    for (const kind of ['baseline', 'gateway'] as const) outcomes[kind] = await run(kind, streams);
    report(streams, outcomes);
    addFigures(streams, outcomes);
  }
  bench.write({ connections: CONNECTIONS, rate: RATE, seconds: SECONDS });
}

const watchdog = setTimeout(() => {
  console.error(`sse-fanout: over ${RUN_LIMIT_MS / 60_000} minutes, stopping`);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
}, RUN_LIMIT_MS);
watchdog.unref();

main().catch((err: unknown) => {
  console.error(err);
  for (const child of children) child.kill('SIGKILL');
  process.exitCode = 1;
});
