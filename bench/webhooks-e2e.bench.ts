/**
 * Webhook delivery as users run it: the gateway in its own process (`bin/proto-gateway serve`,
 * SQLite storage), following a protocol backend's event stream (`bench/support/event-source.ts`,
 * a second process), with subscriptions created through `POST /subscriptions`, delivering signed
 * webhooks to a receiver in a third process (`bench/support/webhook-receiver.ts`) that counts them.
 * Events are released in one burst and delivered/s is counted at the receiver, from the release to
 * the last delivery (ingestion, fan-out, durable queue, signing and POST included). Baseline in the
 * same run: raw undici POSTs of bodies of the same size, with the same headers, to the same
 * receiver from this one process, as many in flight as the gateway may have (4 per subscription,
 * at most `webhooks.concurrency` 64). Also reported: p50/p99 end-to-end latency (release to
 * arrival) of events released one at a time, 200 deliveries/s, where nothing queues.
 *
 * CPU (issue 28): the gateway process's CPU time per delivered webhook during the burst, from
 * `/proc/<pid>/stat`, against the CPU per POST of a process sending the same number of raw POSTs,
 * each signed (HMAC) like the gateway's, median of `ROUNDS` rounds each; the ratio is printed.
 *
 * Each gateway and the raw sender first deliver an unmeasured warm-up burst (`BENCH_WARMUP`).
 *
 * Scenarios: 1 subscription and 16. `--quick`: fewer deliveries (under 30 s in all). Writes
 * `bench/results/webhooks-e2e.json`. Run: `npx node bench/webhooks-e2e.bench.ts [--quick]`
 * (BENCH_DELIVERIES overrides the deliveries per scenario, BENCH_SUBSCRIPTIONS=16 runs one scenario; BENCH_CPU_PROF=<dir> runs the gateway
 * with `--cpu-prof` writing its profile there).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';
import { webhookHeaders } from '../src/bridges/webhooks/signer.ts';
import { spawnWithUrl, stop, stopAll } from './support/processes.ts';
import { BenchReport, sized } from './support/report.ts';
import { cpuMs, median } from './support/cpu.ts';

/** Rounds of each scenario; the medians are reported. */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

/** Scenarios: numbers of subscriptions (`BENCH_SUBSCRIPTIONS`, comma-separated; default 1 and 16). */
const SCENARIOS = (process.env.BENCH_SUBSCRIPTIONS ?? '1,16').split(',').map(Number);

/**
 * Deliveries of the unmeasured burst before each measured one (`BENCH_WARMUP`): V8 compiles a fresh
 * gateway's code during its first deliveries (measured 2026-11-28 at 16 subscriptions: 183 / 204 /
 * 226 µs per delivery without a warm-up, 162 / 159 / 181 after 16,000), while the raw sender runs in
 * this process, warm after its first round.
 */
const WARMUP_DELIVERIES = Number(process.env.BENCH_WARMUP ?? sized(16_000, 2_000));
const DELIVERIES = Math.min(Number(process.env.BENCH_DELIVERIES ?? sized(32_000, 4_000)), 200_000);
/** Paced phase: deliveries per second (whatever the number of subscriptions) and its length, ms. */
const PACED_RATE = 200;
const PACED_MS = sized(3_000, 1_000);
const SECRET = 'whsec_YmVuY2ggc2VjcmV0IGtleSBvZiAyNCBieXRlcw==';
const root = fileURLToPath(new URL('..', import.meta.url));

interface ReceiverStats {
  count: number;
  firstMs: number;
  lastMs: number;
  p50: number | null;
  p99: number | null;
}

const getJson = async <T>(url: string): Promise<T> => (await fetch(url)).json() as Promise<T>;
const post = (url: string, body?: unknown) =>
  fetch(url, { method: 'POST', ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `done` holds (or 60 s pass); returns the last value read. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  const deadline = Date.now() + 60_000;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await sleep(20);
    value = await read();
  }
  return value;
}

/** A gateway process on SQLite following `source`'s event stream, with the webhook bridge on for loopback receivers. */
async function startGateway(dir: string, source: string, name: string): Promise<{ url: string; child: ChildProcess }> {
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, `server: { host: 127.0.0.1, port: 0 }
storage: { driver: sqlite, path: ${join(dir, `${name}.db`)} }
webhooks: { allowHttp: true, allowPrivateNetworks: ["127.0.0.0/8"], concurrency: 64, timeout: 10s }
backends:
  - { id: orders, kind: proto, url: "${source}", refresh: 1h, events: { follow: stream, interval: 1s } }
`);
  const args = ['serve', '--config', file];
  // Profiling: the launcher's command line with --cpu-prof (NODE_OPTIONS may not carry it).
  const profiled = process.env.BENCH_CPU_PROF
    ? spawnWithUrl(process.execPath, ['--disable-warning=ExperimentalWarning', '--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, join(root, 'src/main.ts'), ...args])
    : undefined;
  return profiled ?? spawnWithUrl(join(root, 'bin/proto-gateway'), args);
}

let gatewayRuns = 0;

/** The gateway's deliveries/s and latency with `subscriptions` subscriptions. */
async function gatewayRun(dir: string, receiver: string, subscriptions: number): Promise<{ perSecond: number; total: number; p50: number | null; p99: number | null; cpuMsPerDelivery: number }> {
  const source = await spawnWithUrl(process.execPath, [join(root, 'bench/support/event-source.ts')]);
  // A database of its own per run: a later round on an earlier round's file had that round's
  // subscriptions too (twice the deliveries per event) and its follower cursor past the new
  // source's positions (the paced events waited for the burst).
  const gateway = await startGateway(dir, source.url, `gateway-${subscriptions}-${++gatewayRuns}`);
  await until(() => getJson<{ streams: number }>(`${source.url}/__stats`), (s) => s.streams > 0);
  for (let s = 0; s < subscriptions; s++) {
    const created = await post(`${gateway.url}/subscriptions`, { webhook: { url: `${receiver}/hook/${s}`, secret: SECRET } });
    if (created.status !== 201) throw new Error(`POST /subscriptions answered ${created.status}: ${await created.text()}`);
  }
  const stats = () => getJson<ReceiverStats>(`${receiver}/__stats`);
  // Latency where nothing queues: one event at a time, PACED_RATE deliveries per second.
  await post(`${receiver}/__reset`);
  const paceMs = (1000 * subscriptions) / PACED_RATE;
  const pacedEvents = Math.ceil(PACED_MS / paceMs);
  for (let i = 0; i < pacedEvents; i++) {
    await post(`${source.url}/__release?count=1`);
    await sleep(paceMs);
  }
  const paced = await until(stats, (s) => s.count >= pacedEvents * subscriptions);
  // Warm-up (not measured): a first burst, so the burst measured runs on code V8 has compiled (a
  // fresh gateway spends the first tens of thousands of deliveries compiling; one in service runs
  // for days). The raw sender, this process, is warmed up the same way (`main`).
  if (WARMUP_DELIVERIES > 0) {
    await post(`${receiver}/__reset`);
    const warmEvents = Math.ceil(WARMUP_DELIVERIES / subscriptions);
    await post(`${source.url}/__release?count=${warmEvents}`);
    const warmed = await until(stats, (s) => s.count >= warmEvents * subscriptions);
    if (warmed.count < warmEvents * subscriptions) throw new Error(`warm-up: only ${warmed.count} of ${warmEvents * subscriptions} deliveries arrived`);
  }
  // Throughput: one burst, counted at the receiver from the release to the last delivery.
  await post(`${receiver}/__reset`);
  const events = Math.ceil(DELIVERIES / subscriptions);
  const total = events * subscriptions;
  const cpuBefore = cpuMs(gateway.child.pid!);
  const releasedMs = Date.now();
  await post(`${source.url}/__release?count=${events}`);
  const burst = await until(stats, (s) => s.count >= total);
  if (burst.count < total) throw new Error(`only ${burst.count} of ${total} deliveries arrived`);
  const cpuMsPerDelivery = (cpuMs(gateway.child.pid!) - cpuBefore) / total;
  await stop(source.child);
  await stop(gateway.child);
  return { perSecond: total / ((burst.lastMs - releasedMs) / 1000), total, p50: paced.p50, p99: paced.p99, cpuMsPerDelivery };
}

/** Raw undici POSTs per second to the receiver: `total` bodies of the gateway's size and headers, `inFlight` at once. */
async function rawRun(receiver: string, total: number, inFlight: number): Promise<{ perSecond: number; cpuMsPerPost: number }> {
  const body = JSON.stringify({
    specversion: '1.0', id: 'raw-000000-0', source: 'urn:bench:orders', type: 'OrderPlacedV1', datacontenttype: 'application/json',
    time: new Date().toISOString(), data: { orderId: 'o-0', sku: 'ABC-123', qty: 1, total: 42.5, sentMs: 0 },
  });
  const agent = new Agent({ connections: inFlight });
  let sent = 0;
  const worker = async () => {
    while (sent < total) {
      sent++;
      // Signed per POST, as the gateway signs each attempt (its timestamp is in the signed content).
      const headers = webhookHeaders(`msg_00000000-0000-5000-8000-${String(sent).padStart(12, '0')}`, Math.floor(Date.now() / 1000), body, SECRET);
      const res = await request(`${receiver}/hook/raw`, { method: 'POST', headers, body, dispatcher: agent });
      await res.body.dump();
    }
  };
  const cpuBefore = cpuMs('self');
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - started) / 1000;
  const cpuMsPerPost = (cpuMs('self') - cpuBefore) / total;
  await agent.close();
  return { perSecond: total / seconds, cpuMsPerPost };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-webhooks-e2e-'));
  const report = new BenchReport('webhooks-e2e');
  const latencies: Record<string, { p50: number | null; p99: number | null }> = {};
  try {
    const receiver = (await spawnWithUrl(process.execPath, [join(root, 'bench/support/webhook-receiver.ts')])).url;
    console.log(`node ${process.version}; gateway, event source and receiver each in its own process; ${DELIVERIES} deliveries per scenario\n`);
    console.log(`medians of ${ROUNDS} rounds; CPU from /proc/<pid>/stat (user + system), per delivered webhook / per raw signed POST`);
    console.log('scenario                       gateway (signed, durable)   raw undici POST   ratio    CPU gateway / raw (ratio)       latency p50/p99 (paced)');
    for (const subscriptions of SCENARIOS) {
      const inFlight = Math.min(4 * subscriptions, 64);
      const rounds: Array<{ gateway: Awaited<ReturnType<typeof gatewayRun>>; raw: Awaited<ReturnType<typeof rawRun>> }> = [];
      // The raw sender's warm-up, as the gateway's (not measured).
      if (WARMUP_DELIVERIES > 0) await rawRun(receiver, WARMUP_DELIVERIES, inFlight);
      for (let round = 0; round < ROUNDS; round++) {
        const gateway = await gatewayRun(dir, receiver, subscriptions);
        await post(`${receiver}/__reset`);
        rounds.push({ gateway, raw: await rawRun(receiver, gateway.total, inFlight) });
      }
      const gatewayPerSecond = median(rounds.map((r) => r.gateway.perSecond));
      const rawPerSecond = median(rounds.map((r) => r.raw.perSecond));
      const gatewayCpu = median(rounds.map((r) => r.gateway.cpuMsPerDelivery));
      const rawCpu = median(rounds.map((r) => r.raw.cpuMsPerPost));
      const last = rounds.at(-1)!.gateway;
      const name = `${subscriptions} subscription(s), ${inFlight} in flight`;
      const cpu = `${(gatewayCpu * 1000).toFixed(0)} / ${(rawCpu * 1000).toFixed(0)} µs (${(gatewayCpu / rawCpu).toFixed(2)}x)`;
      console.log(`${name.padEnd(30)} ${gatewayPerSecond.toFixed(0).padStart(13)}/s ${rawPerSecond.toFixed(0).padStart(19)}/s ${(gatewayPerSecond / rawPerSecond).toFixed(2).padStart(7)}x   ${cpu.padEnd(30)}  ${last.p50} / ${last.p99} ms`);
      report.add({ name: `${name}: delivered/s`, unit: 'deliveries/s', gateway: gatewayPerSecond, baseline: rawPerSecond, baselineName: 'raw undici POST', better: 'higher' });
      report.add({ name: `${name}: CPU per delivery`, unit: 'ms CPU/delivery', gateway: gatewayCpu, baseline: rawCpu, baselineName: 'raw signed POST process', better: 'lower' });
      latencies[name] = { p50: last.p50, p99: last.p99 };
    }
    report.write({ deliveries: DELIVERIES, pacedRate: PACED_RATE, pacedMs: PACED_MS, latencyMs: latencies });
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
