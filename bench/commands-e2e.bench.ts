/**
 * The command path as users run it: the gateway in its own process (`bin/proto-gateway serve`),
 * the backend in another (`bench/support/command-sink.ts`), the load from a third (wrk when
 * installed, else autocannon: `bench/support/http-load.ts`; a fresh command id per request).
 * Baselines in the same run: the backend direct, a bare undici pass-through proxy in its own
 * process, and nginx `proxy_pass` when `nginx` is installed (skipped with a note otherwise).
 *
 * The steady figure (issue 29) is CPU time: the gateway's CPU µs per delivered command (all its
 * threads, the SQLite writer's included, from `/proc/<pid>/stat`, from the load's start until the
 * last command reached the backend) against the bare proxy's CPU µs per request (and nginx's,
 * master and worker). Beside it, for the gateway (memory and sqlite stores): accepted/s and p50/p99
 * of `POST /commands`, and delivered/s (commands that reached the backend per second, counted at
 * the backend), as ratios to the bare proxy, the backend direct and nginx. The machine's load
 * drifts, so the bare proxy and the gateways are measured in rounds (proxy, gateway, proxy,
 * gateway…), each gateway phase against the proxy phase just before it, and the median round of
 * each ratio is reported, after an unmeasured warm-up of each server (12 s: V8 compiles the gateway's code meanwhile). The targets are judged on the last lines. Full: 3 rounds of 6 s phases;
 * `--quick`: 1 round of 3 s. Writes `bench/results/commands-e2e.json` (every phase's numbers, the
 * figures and the targets).
 *
 * Run: `npx node bench/commands-e2e.bench.ts [--quick]` (BENCH_SECONDS, BENCH_ROUNDS, BENCH_CLIENTS,
 * BENCH_LOAD=wrk|autocannon override; BENCH_CPU_PROF=<dir> runs the gateways with `--cpu-prof`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load as runLoad, loadTool, type Load } from './support/http-load.ts';
import { cpuMicros, threadCpuMicros, threadCpuSpent, treeCpuMicros, waitedChildrenCpuMicros, withCpu, type ThreadCpu } from './support/process-cpu.ts';
import { freePort, spawnWithUrl, stop, stopAll, track } from './support/processes.ts';
import { BenchReport, sized } from './support/report.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? sized(6, 3));
/** Rounds of bare proxy / memory / sqlite phases (the median round is reported). */
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? sized(3, 1));
const CLIENTS = Number(process.env.BENCH_CLIENTS ?? 32);
/**
 * Load on each server before the rounds, in s (not measured). The gateway's code is far larger than
 * the bare proxy's: under this load V8 goes on compiling it on its worker threads (tiering up,
 * re-optimising after deopts) for about 10 s, at 40–70 µs of CPU per command in the first seconds
 * and under 5 µs after (BENCHMARKS.md, 2026-11-25, issue-29-cpu). A gateway that has run for a
 * minute no longer pays it, so the rounds start after it.
 */
const WARMUP_SECONDS = sized(12, 1);
const TOOL = loadTool();
const root = fileURLToPath(new URL('..', import.meta.url));

const BODY = JSON.stringify({
  specversion: '1.0', id: '[<id>]', source: 'urn:bench', type: 'AuthorizePayment', datacontenttype: 'application/json',
  dataschema: 'authorize-payment/1.0', time: '2030-01-01T00:00:00Z', data: { orderId: 'ord-1', amount: 25 },
});

const load = (url: string): Promise<Load> => runLoad(TOOL, url, BODY, CLIENTS, SECONDS);

async function sinkStats(sink: string): Promise<{ count: number; firstMs: number; lastMs: number }> {
  return (await fetch(`${sink}/__stats`)).json() as Promise<{ count: number; firstMs: number; lastMs: number }>;
}

/** nginx `proxy_pass` to `target` in its own process, or undefined when nginx is not installed. */
async function startNginx(dir: string, target: string): Promise<{ url: string; child: ChildProcess } | undefined> {
  if (spawnSync('sh', ['-c', 'command -v nginx']).status !== 0) return undefined;
  const port = await freePort();
  const conf = join(dir, 'nginx.conf');
  writeFileSync(conf, `worker_processes 1; daemon off; pid ${dir}/nginx.pid; error_log ${dir}/nginx-error.log;
events { worker_connections 4096; }
http { access_log off; client_body_temp_path ${dir}; proxy_temp_path ${dir};
  upstream backend { server ${new URL(target).host}; keepalive 64; }
  server { listen 127.0.0.1:${port}; location / { proxy_pass http://backend; proxy_http_version 1.1; proxy_set_header Connection ""; } } }
`);
  const child = spawn('nginx', ['-c', conf, '-p', dir], { stdio: 'ignore' });
  track(child);
  for (let i = 0; i < 50; i++) {
    if (await fetch(`http://127.0.0.1:${port}/__stats`).then(() => true, () => false)) return { url: `http://127.0.0.1:${port}`, child };
    await new Promise((r) => setTimeout(r, 100));
  }
  return undefined;
}

/** A gateway process on `driver` in front of the sink (with `--cpu-prof` into `BENCH_CPU_PROF` when set). */
async function startGatewayProcess(dir: string, sink: string, driver: 'memory' | 'sqlite'): Promise<{ url: string; child: ChildProcess }> {
  const file = join(dir, `gateway-${driver}.yaml`);
  writeFileSync(file, `server: { host: 127.0.0.1, port: 0 }
storage: { driver: ${driver}, path: ${join(dir, `gateway-${driver}.db`)} }
commands: { dispatch: { timeout: 10s, concurrency: 64 } }
backends:
  - { id: payments, kind: proto, url: "${sink}", refresh: 1h, events: { follow: poll, interval: 1h } }
`);
  const profile = process.env.BENCH_CPU_PROF;
  if (!profile) return spawnWithUrl(join(root, 'bin/proto-gateway'), ['serve', '--config', file]);
  const out = resolve(profile, driver);
  mkdirSync(out, { recursive: true });
  return spawnWithUrl(join(root, 'node_modules/node/bin/node'), ['--disable-warning=ExperimentalWarning', '--cpu-prof', `--cpu-prof-dir=${out}`, join(root, 'src/main.ts'), 'serve', '--config', file]);
}

/** Waits until the sink has seen `expected` commands (or 30 s); delivered/s from the load's start. */
async function delivered(sink: string, expected: number, startedMs: number): Promise<{ perSecond: number; count: number }> {
  const deadline = Date.now() + 30_000;
  let stats = await sinkStats(sink);
  while (stats.count < expected && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    stats = await sinkStats(sink);
  }
  return { perSecond: stats.count / Math.max(0.001, (stats.lastMs - startedMs) / 1000), count: stats.count };
}

const fmt = (n: number) => n.toLocaleString('en-US', { maximumFractionDigits: 0 });

/** The targets of issue 29 (CPU, delivered/s, p99) and of issue 11 (memory delivered/s), judged on the median rounds of this run. */
const TARGETS = { sqliteCpu: 2.0, memoryCpu: 1.5, delivered: 0.8, p99: 1.5 };

/** One round of a gateway: its load, what reached the backend, CPU µs per command, and the bare proxy measured just before. */
interface Round {
  accepted: Load;
  reached: { perSecond: number; count: number };
  /** Gateway CPU µs per delivered command (NaN when it cannot be measured). */
  cpuPerCommand: number;
  bare: Load;
  /** Bare proxy CPU µs per request. */
  bareCpuPerRequest: number;
  /** The gateway's CPU µs per delivered command by thread kind, and how busy its event loop was (CPU / wall time of the phase). */
  threads?: ThreadCpu & { busy: number };
  /** The bare proxy's event loop: CPU µs per request, and how busy it was. */
  bareEventLoop?: { perRequest: number; busy: number };
  /** CPU µs per command of the other two processes on the machine in the gateway's phase: the backend and the load tool. */
  others?: Others;
  /** The same in the bare proxy's phase, per request. */
  bareOthers?: Others;
}

/** CPU µs per request of the backend and of the load tool in one phase. */
interface Others {
  backend: number;
  load: number;
}

/** Runs a phase and returns what it returned with the backend's and the load tool's CPU µs per unit (`count` of the result). */
async function withOthers<T>(backendPid: number | undefined, work: () => Promise<T> | T, count: (result: T) => number): Promise<{ result: T; others: Others | undefined }> {
  const backend = cpuMicros(backendPid);
  const load = waitedChildrenCpuMicros();
  const result = await work();
  const backendAfter = cpuMicros(backendPid);
  const loadAfter = waitedChildrenCpuMicros();
  const n = count(result);
  if (backend === undefined || load === undefined || backendAfter === undefined || loadAfter === undefined || n === 0) return { result, others: undefined };
  return { result, others: { backend: (backendAfter - backend) / n, load: (loadAfter - load) / n } };
}

/** CPU by thread kind per unit, with the event loop's busy share over `wallMs`. */
function perThread(spent: ThreadCpu | undefined, count: number, wallMs: number): (ThreadCpu & { busy: number }) | undefined {
  if (!spent || count === 0) return undefined;
  return { eventLoop: spent.eventLoop / count, workers: spent.workers / count, v8: spent.v8 / count, other: spent.other / count, busy: spent.eventLoop / (wallMs * 1000) };
}

/** A phase's CPU by thread kind: what `work` returned, the split spent meanwhile and the wall time it took. */
async function withThreadCpu<T>(pid: number | undefined, work: () => Promise<T> | T): Promise<{ result: T; spent: ThreadCpu | undefined; wallMs: number }> {
  const before = threadCpuMicros(pid);
  const startedMs = performance.now();
  const result = await work();
  return { result, spent: threadCpuSpent(before, threadCpuMicros(pid)), wallMs: performance.now() - startedMs };
}

/** The round whose `ratio` is the median (a real, paired measurement, not a mix of two). */
function medianRound(rounds: Round[], ratio: (round: Round) => number): Round {
  return [...rounds].sort((a, b) => ratio(a) - ratio(b))[Math.floor((rounds.length - 1) / 2)];
}

/** CPU µs per command of the whole machine's work: the server's, the backend's and the load tool's. */
const machineCpu = (server: number, others: Others): number => server + others.backend + others.load;

const perUnit = (micros: number | undefined, count: number): number => (micros === undefined || count === 0 ? NaN : micros / count);
const cpuText = (micros: number): string => (Number.isNaN(micros) ? 'n/a' : `${micros.toFixed(0)} µs`);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-e2e-'));
  const report = new BenchReport('commands-e2e');
  const phases: Record<string, unknown> = {};
  try {
    const sinkProcess = await spawnWithUrl(process.execPath, [join(root, 'bench/support/command-sink.ts')]);
    const sink = sinkProcess.url;
    const proxy = await spawnWithUrl(process.execPath, [join(root, 'bench/support/bare-proxy.ts')], { TARGET: sink });
    const gateways = { memory: await startGatewayProcess(dir, sink, 'memory'), sqlite: await startGatewayProcess(dir, sink, 'sqlite') };
    console.log(`node ${process.version}, ${CLIENTS} connections, ${SECONDS} s per phase, ${ROUNDS} round(s) of bare proxy / memory / sqlite, each process on its own (load: ${TOOL})\n`);
    console.log('phase                               req/s     p50 ms   p99 ms   CPU/request');
    const line = (label: string, r: Load, cpu?: number) => console.log(`  ${label.padEnd(32)} ${fmt(r.perSecond).padStart(7)}  ${r.p50.toFixed(1).padStart(7)}  ${r.p99.toFixed(1).padStart(7)}   ${cpu === undefined ? '' : cpuText(cpu).padStart(8)}${r.errors ? `   (${r.errors} errors)` : ''}`);
    const direct = await load(`${sink}/commands`);
    line('backend, direct', direct);
    phases.direct = direct;
    const nginx = await startNginx(dir, sink);
    let viaNginx: (Load & { cpuPerRequest: number }) | undefined;
    if (nginx) {
      const { result, cpuMicros: spent } = await withCpu(() => treeCpuMicros(nginx.child.pid), () => load(`${nginx.url}/commands`));
      viaNginx = { ...result, cpuPerRequest: perUnit(spent, result.ok) };
      line('nginx proxy_pass', viaNginx, viaNginx.cpuPerRequest);
      phases.nginx = viaNginx;
      await stop(nginx.child);
    } else {
      console.log('  nginx proxy_pass                 skipped: nginx is not installed (apt-get install nginx)');
      phases.nginx = 'skipped: nginx is not installed';
    }
    // Warm-up (not measured): the first seconds of a fresh process are the JIT's, not the steady state.
    for (const url of [proxy.url, gateways.memory.url, gateways.sqlite.url]) await runLoad(TOOL, `${url}/commands`, BODY, CLIENTS, WARMUP_SECONDS);
    // Rounds: the machine's load drifts between phases, so each gateway phase is judged against the
    // bare proxy measured just before it, and the median round is reported.
    const rounds: Record<'memory' | 'sqlite', Round[]> = { memory: [], sqlite: [] };
    for (let round = 1; round <= ROUNDS; round++) {
      console.log(`round ${round}`);
      for (const driver of ['memory', 'sqlite'] as const) {
        const bareRun = await withOthers(sinkProcess.child.pid, () => withThreadCpu(proxy.child.pid, () => withCpu(() => cpuMicros(proxy.child.pid), () => load(`${proxy.url}/commands`))), (phase) => phase.result.result.ok);
        const bareSplit = bareRun.result;
        const bare = bareSplit.result;
        const bareCpuPerRequest = perUnit(bare.cpuMicros, bare.result.ok);
        line('bare undici proxy (own process)', bare.result, bareCpuPerRequest);
        const bareThreads = perThread(bareSplit.spent, bare.result.ok, bareSplit.wallMs);
        await fetch(`${sink}/__reset`, { method: 'POST' });
        const startedMs = Date.now();
        const run = await withOthers(sinkProcess.child.pid, () => withThreadCpu(gateways[driver].child.pid, () => withCpu(() => cpuMicros(gateways[driver].child.pid), async () => {
          const accepted = await load(`${gateways[driver].url}/commands`);
          return { accepted, reached: await delivered(sink, accepted.ok, startedMs) };
        })), (phase) => phase.result.result.reached.count);
        const split = run.result;
        const gateway = split.result;
        const { accepted, reached } = gateway.result;
        const cpuPerCommand = perUnit(gateway.cpuMicros, reached.count);
        const threads = perThread(split.spent, reached.count, split.wallMs);
        line(`gateway (${driver}), accepted`, accepted);
        console.log(`  gateway (${driver}), delivered       ${fmt(reached.perSecond).padStart(7)}                     ${cpuText(cpuPerCommand).padStart(8)}   (${fmt(reached.count)} of ${fmt(accepted.ok)} accepted reached the backend)`);
        if (threads && bareThreads) console.log(`    by thread, µs per command: event loop ${threads.eventLoop.toFixed(0)} (busy ${(100 * threads.busy).toFixed(0)} %; bare proxy's ${bareThreads.eventLoop.toFixed(0)}, busy ${(100 * bareThreads.busy).toFixed(0)} %), worker threads ${threads.workers.toFixed(0)}, V8 helpers ${threads.v8.toFixed(0)}, other ${threads.other.toFixed(0)}`);
        if (run.others && bareRun.others) console.log(`    the rest of the machine, µs per command: backend ${run.others.backend.toFixed(0)}, load tool ${run.others.load.toFixed(0)} (bare proxy's phase: ${bareRun.others.backend.toFixed(0)}, ${bareRun.others.load.toFixed(0)})`);
        rounds[driver].push({
          accepted, reached, cpuPerCommand, bare: bare.result, bareCpuPerRequest,
          ...(threads && { threads }), ...(bareThreads && { bareEventLoop: { perRequest: bareThreads.eventLoop, busy: bareThreads.busy } }),
          ...(run.others && { others: run.others }), ...(bareRun.others && { bareOthers: bareRun.others }),
        });
      }
    }
    phases.rounds = rounds;
    console.log('');
    const judged: string[] = [];
    const eventLoops: string[] = [];
    const machines: string[] = [];
    for (const driver of ['memory', 'sqlite'] as const) {
      const figure = (name: string, ratio: (round: Round) => number, gateway: (round: Round) => number, baseline: (round: Round) => number, better: 'higher' | 'lower', unit: string) => {
        const round = medianRound(rounds[driver], ratio);
        report.add({ name: `gateway ${driver}: ${name}`, unit, gateway: gateway(round), baseline: baseline(round), baselineName: 'bare undici proxy', better });
        return ratio(round);
      };
      const cpuRatio = figure('CPU per delivered command', (r) => r.cpuPerCommand / r.bareCpuPerRequest, (r) => r.cpuPerCommand, (r) => r.bareCpuPerRequest, 'lower', 'µs');
      figure('accepted/s', (r) => r.accepted.perSecond / r.bare.perSecond, (r) => r.accepted.perSecond, (r) => r.bare.perSecond, 'higher', 'req/s');
      const deliveredRatio = figure('delivered/s', (r) => r.reached.perSecond / r.bare.perSecond, (r) => r.reached.perSecond, (r) => r.bare.perSecond, 'higher', 'req/s');
      figure('POST /commands p50', (r) => r.accepted.p50 / Math.max(1, r.bare.p50), (r) => r.accepted.p50, (r) => Math.max(1, r.bare.p50), 'lower', 'ms');
      const p99Ratio = figure('POST /commands p99', (r) => r.accepted.p99 / Math.max(1, r.bare.p99), (r) => r.accepted.p99, (r) => Math.max(1, r.bare.p99), 'lower', 'ms');
      const best = medianRound(rounds[driver], (r) => r.reached.perSecond);
      report.add({ name: `gateway ${driver}: delivered/s vs backend direct`, unit: 'req/s', gateway: best.reached.perSecond, baseline: direct.perSecond, baselineName: 'backend direct', better: 'higher' });
      if (viaNginx) {
        report.add({ name: `gateway ${driver}: delivered/s vs nginx`, unit: 'req/s', gateway: best.reached.perSecond, baseline: viaNginx.perSecond, baselineName: 'nginx proxy_pass', better: 'higher' });
        const cpu = medianRound(rounds[driver], (r) => r.cpuPerCommand).cpuPerCommand;
        report.add({ name: `gateway ${driver}: CPU per delivered command vs nginx`, unit: 'µs', gateway: cpu, baseline: viaNginx.cpuPerRequest, baselineName: 'nginx proxy_pass', better: 'lower' });
      }
      const cpuTarget = driver === 'sqlite' ? TARGETS.sqliteCpu : TARGETS.memoryCpu;
      const verdict = (met: boolean) => (met ? 'met' : 'not met');
      const loopRound = medianRound(rounds[driver], (r) => (r.threads && r.bareEventLoop ? r.threads.eventLoop / r.bareEventLoop.perRequest : NaN));
      if (loopRound.threads && loopRound.bareEventLoop) {
        // Delivered/s follows this ratio while the gateway's event loop is saturated (busy near the bare proxy's); a SQLite event loop less busy waits for commits.
        const { threads, bareEventLoop } = loopRound;
        report.add({ name: `gateway ${driver}: event-loop CPU per delivered command`, unit: 'µs', gateway: threads.eventLoop, baseline: bareEventLoop.perRequest, baselineName: 'bare undici proxy (event loop)', better: 'lower' });
        eventLoops.push(`${driver}: event loop ${threads.eventLoop.toFixed(0)} µs per command vs ${bareEventLoop.perRequest.toFixed(0)} µs (${(threads.eventLoop / bareEventLoop.perRequest).toFixed(2)}x), busy ${(100 * threads.busy).toFixed(0)} % vs ${(100 * bareEventLoop.busy).toFixed(0)} %; worker threads ${threads.workers.toFixed(0)} µs, V8 helpers ${threads.v8.toFixed(0)} µs`);
      }
      const machineRound = medianRound(rounds[driver], (r) => (r.others && r.bareOthers ? machineCpu(r.cpuPerCommand, r.others) / machineCpu(r.bareCpuPerRequest, r.bareOthers) : NaN));
      if (machineRound.others && machineRound.bareOthers) {
        // With every core busy, a request's rate is bounded by what all three processes spend on it.
        const gatewaySide = machineCpu(machineRound.cpuPerCommand, machineRound.others);
        const bareSide = machineCpu(machineRound.bareCpuPerRequest, machineRound.bareOthers);
        machines.push(`${driver}: gateway + backend + load ${gatewaySide.toFixed(0)} µs per command vs bare proxy + backend + load ${bareSide.toFixed(0)} µs: with the cores saturated, delivered/s is at most ${(bareSide / gatewaySide).toFixed(2)}x the bare proxy's`);
      }
      judged.push(`${driver}: CPU ${cpuRatio.toFixed(2)}x (target <= ${cpuTarget}x: ${verdict(cpuRatio <= cpuTarget)}), delivered/s ${deliveredRatio.toFixed(2)}x (target >= ${TARGETS.delivered}x: ${verdict(deliveredRatio >= TARGETS.delivered)}), p99 ${p99Ratio.toFixed(2)}x (target <= ${TARGETS.p99}x: ${verdict(p99Ratio <= TARGETS.p99)})`);
    }
    const bare = medianRound(rounds.memory, (r) => r.bare.perSecond).bare;
    report.add({ name: 'bare proxy req/s vs backend direct', unit: 'req/s', gateway: bare.perSecond, baseline: direct.perSecond, baselineName: 'backend direct', better: 'higher' });
    if (viaNginx) {
      report.add({ name: 'nginx proxy_pass req/s vs bare proxy', unit: 'req/s', gateway: viaNginx.perSecond, baseline: bare.perSecond, baselineName: 'bare undici proxy', better: 'higher' });
      const bareCpu = medianRound(rounds.memory, (r) => r.bareCpuPerRequest).bareCpuPerRequest;
      report.add({ name: 'nginx proxy_pass CPU per request vs bare proxy', unit: 'µs', gateway: viaNginx.cpuPerRequest, baseline: bareCpu, baselineName: 'bare undici proxy', better: 'lower' });
    }
    if (eventLoops.length > 0) console.log(`\nby thread, against the bare proxy's event loop (median round of the ratio):\n  ${eventLoops.join('\n  ')}`);
    if (machines.length > 0) console.log(`\nthe whole machine (${availableParallelism()} cores; median round of the ratio):\n  ${machines.join('\n  ')}`);
    console.log(`\nissue 29 targets against the bare proxy (median round of each ratio):\n  ${judged.join('\n  ')}`);
    report.write({ clients: CLIENTS, seconds: SECONDS, rounds: ROUNDS, load: TOOL, phases, targets: TARGETS });
  } finally {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
