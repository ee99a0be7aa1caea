/**
 * The load of the end-to-end benchmarks, from a process of its own: `wrk` when it is installed
 * (a C load generator: it leaves more of a small machine's cores to the servers measured), else
 * autocannon (always there, a dev dependency). `BENCH_LOAD=autocannon|wrk` chooses. Every request
 * is a POST of `body` with `[<id>]` replaced by a random UUID (v4), so each is a new command for the
 * gateway, and its ids land all over the idempotency index as real clients' do (sequential ids would
 * append to it: a `FULL` commit of 20 accepts + 20 completions costs 338 µs of CPU with them and 791
 * with random ones; autocannon's `-I` makes random UUIDs too).
 *
 * The tool runs asynchronously: the benchmark's event loop keeps draining the stdout of the
 * processes it measures while the load runs, as a user's log collector does. (Run synchronously,
 * it left the gateway's access log stalled in a full pipe for the whole phase: its lines piled up
 * in memory and were written after the phase, in large writes the measurement then mostly missed.)
 */
import { randomInt } from 'node:crypto';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What one load phase measured (latencies in ms). */
export interface Load {
  perSecond: number;
  p50: number;
  p99: number;
  /** 2xx answers. */
  ok: number;
  /** Non-2xx answers and transport errors. */
  errors: number;
}

/** The load generator a run uses. */
export type LoadTool = 'wrk' | 'autocannon';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** `BENCH_LOAD` when set, else wrk when installed, else autocannon. */
export function loadTool(): LoadTool {
  const chosen = process.env.BENCH_LOAD;
  if (chosen === 'wrk' || chosen === 'autocannon') return chosen;
  return spawnSync('sh', ['-c', 'command -v wrk']).status === 0 ? 'wrk' : 'autocannon';
}

/** POSTs `body` (JSON, `[<id>]` made unique per request) to `url` from `clients` connections for `seconds`. */
export function load(tool: LoadTool, url: string, body: string, clients: number, seconds: number): Promise<Load> {
  return tool === 'wrk' ? wrkLoad(url, body, clients, seconds) : autocannonLoad(url, body, clients, seconds);
}

/** Runs `command` to its end without blocking the event loop; resolves with its stdout and stderr. */
function run(command: string, args: string[]): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', () => resolve({ stdout, stderr }));
  });
}

async function autocannonLoad(url: string, body: string, clients: number, seconds: number): Promise<Load> {
  const result = await run(join(root, 'node_modules/.bin/autocannon'), ['-c', String(clients), '-d', String(seconds), '-m', 'POST', '-H', 'content-type=application/json', '-b', body, '-I', '-j', url]);
  const report = JSON.parse(result.stdout) as { requests: { average: number }; latency: { p50: number; p99: number }; '2xx': number; non2xx: number; errors: number };
  return { perSecond: report.requests.average, p50: report.latency.p50, p99: report.latency.p99, ok: report['2xx'], errors: report.non2xx + report.errors };
}

/** wrk with one thread; a Lua script makes each body's id unique and prints the summary as JSON. */
async function wrkLoad(url: string, body: string, clients: number, seconds: number): Promise<Load> {
  const dir = mkdtempSync(join(tmpdir(), 'pgw-wrk-'));
  try {
    const script = join(dir, 'post.lua');
    writeFileSync(script, `
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
local template = ${JSON.stringify(body)}
math.randomseed(${randomInt(2 ** 31)})
local r = math.random
request = function()
  local id = string.format("%04x%04x-%04x-4%03x-%04x-%04x%04x%04x", r(0, 0xffff), r(0, 0xffff), r(0, 0xffff), r(0, 0xfff), r(0x8000, 0xbfff), r(0, 0xffff), r(0, 0xffff), r(0, 0xffff))
  return wrk.format(nil, nil, nil, (template:gsub("%[<id>%]", id)))
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('\\n{"requests":%d,"durationUs":%d,"p50Us":%d,"p99Us":%d,"transport":%d,"status":%d}\\n',
    summary.requests, summary.duration, latency:percentile(50), latency:percentile(99),
    e.connect + e.read + e.write + e.timeout, e.status))
end
`);
    const result = await run('wrk', ['-t1', `-c${clients}`, `-d${seconds}s`, '--timeout', '10s', '-s', script, url]);
    const line = result.stdout.split('\n').find((text) => text.startsWith('{"requests"'));
    if (!line) throw new Error(`wrk gave no summary: ${result.stdout}${result.stderr}`);
    const report = JSON.parse(line) as { requests: number; durationUs: number; p50Us: number; p99Us: number; transport: number; status: number };
    const ok = report.requests - report.status;
    return { perSecond: ok / (report.durationUs / 1e6), p50: report.p50Us / 1000, p99: report.p99Us / 1000, ok, errors: report.status + report.transport };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
