/**
 * Command path benchmark: `POST /commands` through the gateway against the same backend called
 * directly and through a bare undici pass-through proxy, side by side in one run, on loopback.
 * Run with `node bench/commands.bench.ts` (the pinned Node 24: `npx node bench/commands.bench.ts`).
 *
 * The backend is a minimal protocol sink (catalogue, schema, `POST /commands` → 201 { id }) that
 * notes when each command arrives. Each phase runs BENCH_SECONDS (default 3) with BENCH_CLIENTS
 * (default 32) concurrent clients sending fresh commands, then prints throughput and latency
 * p50/p99 of the answer and, for the gateway, of accepted → delivered (the backend's arrival time
 * minus the send time; throughput = commands delivered per second of the phase until the last one
 * arrived). Ratios are against the direct call and the bare proxy. `--quick`: 1 s phases. Each
 * gateway figure is also a `ratio` line against the bare proxy, written to `bench/results/commands.json`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Agent, request } from 'undici';
import { startGateway, type Gateway } from '../src/app.ts';
import { parseConfig } from '../src/gateway-config.ts';
import { bareProxy } from './support/bare-proxy.ts';
import { BenchReport, sized } from './support/report.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? sized(3, 1));
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
/** How long a phase may take to deliver its backlog after the clients stop, in ms. */
const DRAIN_LIMIT_MS = 30_000;

interface Sink {
  url: string;
  /** Arrival time (performance.now) by command id. */
  arrivals: Map<string, number>;
  server: Server;
}

interface PhaseResult {
  label: string;
  perSecond: number;
  p50: number;
  p99: number;
  delivered?: { perSecond: number; p50: number; p99: number; count: number };
}

async function body(req: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of req) text += chunk;
  return text;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as { port: number }).port}`)));
}

/** The backend: just enough protocol for the gateway's catalogue, and a 201 for every command. */
async function startSink(): Promise<Sink> {
  const arrivals = new Map<string, number>();
  const server = createServer(async (req, res) => {
    const text = await body(req);
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'POST' && req.url === '/commands') {
      const { id } = JSON.parse(text) as { id: string };
      arrivals.set(id, performance.now());
      return json(201, { id });
    }
    if (req.url === '/commands') return json(200, { commands: [{ schema: 'authorize-payment', version: '1.0' }] });
    if (req.url === '/commands/authorize-payment/1.0') {
      return json(200, { type: 'object', required: ['orderId', 'amount'], properties: { orderId: { type: 'string' }, amount: { type: 'number' } } });
    }
    if (req.url?.startsWith('/events')) return json(200, { events: [] });
    json(404, { error: { code: 'NOT_FOUND', message: 'no route' } });
  });
  return { url: await listen(server), arrivals, server };
}

/** The bare pass-through proxy (`support/bare-proxy.ts`), listening. */
async function startProxy(target: string): Promise<{ url: string; server: Server }> {
  const server = bareProxy(target, CLIENTS * 2);
  return { url: await listen(server), server };
}

function command(): { id: string; text: string } {
  const id = randomUUID();
  const text = JSON.stringify({
    specversion: '1.0', id, source: 'urn:bench', type: 'AuthorizePayment', datacontenttype: 'application/json',
    dataschema: 'authorize-payment/1.0', time: new Date().toISOString(), data: { orderId: 'ord-1', amount: 25 },
  });
  return { id, text };
}

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** Runs CLIENTS loops of POSTs to `url` for SECONDS; returns per-request latencies and send times. */
async function drive(url: string): Promise<{ latencies: number[]; sent: Map<string, number>; elapsedMs: number; startedAt: number }> {
  const agent = new Agent({ connections: CLIENTS });
  const latencies: number[] = [];
  const sent = new Map<string, number>();
  const startedAt = performance.now();
  const stopAt = startedAt + SECONDS * 1000;
  const client = async () => {
    while (performance.now() < stopAt) {
      const { id, text } = command();
      const t0 = performance.now();
      sent.set(id, t0);
      const res = await request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: text, dispatcher: agent });
      await res.body.dump();
      if (res.statusCode !== 201) throw new Error(`${url} answered ${res.statusCode}`);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, client));
  const elapsedMs = performance.now() - startedAt;
  await agent.close();
  return { latencies: latencies.sort((a, b) => a - b), sent, elapsedMs, startedAt };
}

async function phase(label: string, url: string, sink?: Sink): Promise<PhaseResult> {
  sink?.arrivals.clear();
  const run = await drive(url);
  const result: PhaseResult = { label, perSecond: (run.latencies.length / run.elapsedMs) * 1000, p50: percentile(run.latencies, 50), p99: percentile(run.latencies, 99) };
  if (!sink) return result;
  const deadline = performance.now() + DRAIN_LIMIT_MS;
  while ([...run.sent.keys()].some((id) => !sink.arrivals.has(id)) && performance.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const delays = [...run.sent].flatMap(([id, t0]) => (sink.arrivals.has(id) ? [sink.arrivals.get(id)! - t0] : [])).sort((a, b) => a - b);
  const last = Math.max(...[...run.sent.keys()].map((id) => sink.arrivals.get(id) ?? 0));
  result.delivered = { perSecond: (delays.length / (last - run.startedAt)) * 1000, p50: percentile(delays, 50), p99: percentile(delays, 99), count: delays.length };
  return result;
}

async function gateway(sinkUrl: string, storage: string): Promise<Gateway> {
  const yaml = `server: { host: 127.0.0.1, port: 0 }
${storage}
commands: { dispatch: { concurrency: 64, timeout: 10s } }
backends:
  - id: sink
    kind: proto
    url: ${sinkUrl}
    refresh: 10m
    events: { follow: poll, interval: 10m }
`;
  const config = await parseConfig(yaml, join(tmpdir(), 'bench-gateway.yaml'), {});
  return startGateway(config, { logger: pino({ level: 'silent' }), registry: new Registry() });
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

function print(results: PhaseResult[]): void {
  const [direct, proxy] = results;
  console.log('phase                               req/s     p50 ms   p99 ms   req/s vs direct  vs proxy   p99 vs direct  vs proxy');
  for (const r of results) {
    console.log(
      `  ${r.label.padEnd(32)} ${fmt(r.perSecond).padStart(7)} ${fmt(r.p50, 2).padStart(9)} ${fmt(r.p99, 2).padStart(8)} ` +
        `${fmt(r.perSecond / direct.perSecond, 2).padStart(16)} ${fmt(r.perSecond / proxy.perSecond, 2).padStart(9)} ` +
        `${fmt(r.p99 / direct.p99, 2).padStart(14)} ${fmt(r.p99 / proxy.p99, 2).padStart(9)}`,
    );
  }
  console.log('\naccepted → delivered (at the backend)   delivered/s   p50 ms   p99 ms   /s vs direct  vs proxy');
  for (const r of results.filter((x) => x.delivered)) {
    const d = r.delivered!;
    console.log(`  ${r.label.padEnd(36)} ${fmt(d.perSecond).padStart(11)} ${fmt(d.p50, 2).padStart(8)} ${fmt(d.p99, 2).padStart(8)} ${fmt(d.perSecond / direct.perSecond, 2).padStart(14)} ${fmt(d.perSecond / proxy.perSecond, 2).padStart(9)}   (${fmt(d.count)} commands)`);
  }
}

/** The gateway phases against the bare undici proxy, as `ratio` lines and JSON. */
function report(results: PhaseResult[]): void {
  const bench = new BenchReport('commands');
  const proxy = results[1];
  const baselineName = 'bare undici proxy';
  for (const r of results.slice(2)) {
    bench.add({ name: `${r.label}: POST /commands throughput`, unit: 'req/s', gateway: r.perSecond, baseline: proxy.perSecond, baselineName, better: 'higher' });
    bench.add({ name: `${r.label}: POST /commands p99`, unit: 'ms', gateway: r.p99, baseline: proxy.p99, baselineName, better: 'lower' });
  }
  bench.write({ clients: CLIENTS, seconds: SECONDS, phases: results });
}

async function main(): Promise<void> {
  console.log(`node ${process.version}, ${CLIENTS} clients, ${SECONDS} s per phase, loopback\n`);
  const sink = await startSink();
  const proxy = await startProxy(sink.url);
  const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-'));
  const memory = await gateway(sink.url, 'storage: { driver: memory }');
  const sqlite = await gateway(sink.url, `storage: { driver: sqlite, path: ${join(dir, 'gateway.db')} }`);
  try {
    // A short warm-up of every path (JIT, connections), not measured.
    for (const url of [`${sink.url}/commands`, `${proxy.url}/commands`, `${memory.url}commands`, `${sqlite.url}commands`]) {
      await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: command().text });
    }
    const results = [
      await phase('backend, direct', `${sink.url}/commands`),
      await phase('bare undici pass-through proxy', `${proxy.url}/commands`),
      await phase('gateway, memory store', `${memory.url}commands`, sink),
      await phase('gateway, sqlite store', `${sqlite.url}commands`, sink),
    ];
    print(results);
    report(results);
  } finally {
    await memory.close();
    await sqlite.close();
    proxy.server.close();
    sink.server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
