/**
 * CPU time of another process, from `/proc/<pid>/stat` (Linux): user + system time of all its
 * threads (the SQLite writer thread included), and of its child processes when asked (nginx's
 * workers under its master). The steady figure of the end-to-end benchmarks: on a shared machine a
 * server's throughput moves with whatever else runs, its CPU time per request much less.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of `/proc` times (`getconf CLK_TCK`; 100 on every Linux we run on). */
const TICKS_PER_SECOND = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout?.trim()) || 100;

/**
 * A `/proc/.../stat` file read: the command name (`comm`) and the CPU µs of two of its time fields
 * (proc(5), counted from 1: utime 14 and stime 15 for own time, cutime 16 and cstime 17 for waited
 * children's); undefined when the file is not there (not Linux, or the process or thread is gone).
 */
function readStat(path: string, timeFields: [number, number]): { name: string; micros: number } | undefined {
  let stat: string;
  try {
    stat = readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
  // The name may hold spaces and parentheses: the fields start after its last closing parenthesis, at field 3.
  const close = stat.lastIndexOf(')');
  const fields = stat.slice(close + 2).split(' ');
  const ticks = Number(fields[timeFields[0] - 3]) + Number(fields[timeFields[1] - 3]);
  return { name: stat.slice(stat.indexOf('(') + 1, close), micros: (ticks * 1e6) / TICKS_PER_SECOND };
}

/** Own time: user and system. */
const OWN: [number, number] = [14, 15];

/** User + system CPU time of `pid` (all threads), in µs; undefined where `/proc` is not there (not Linux) or the process is gone. */
export function cpuMicros(pid: number | undefined): number | undefined {
  return pid === undefined ? undefined : readStat(`/proc/${pid}/stat`, OWN)?.micros;
}

/** Where a Node process's CPU went, in µs: its main thread (the event loop), its worker threads (`new Worker`), V8's helper threads (GC, compiler) and the rest (libuv's pool, the inspector). */
export interface ThreadCpu {
  eventLoop: number;
  workers: number;
  v8: number;
  other: number;
}

/** `ThreadCpu` of `pid` from `/proc/<pid>/task/<tid>/stat`; undefined where `/proc` is not there. Threads are told apart by their names (`comm`): Node names worker threads `WorkerThread`, V8's helpers `V8Worker`/`v8:…`. */
export function threadCpuMicros(pid: number | undefined): ThreadCpu | undefined {
  if (pid === undefined) return undefined;
  let tids: string[];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return undefined;
  }
  const split: ThreadCpu = { eventLoop: 0, workers: 0, v8: 0, other: 0 };
  for (const tid of tids) {
    const thread = readStat(`/proc/${pid}/task/${tid}/stat`, OWN);
    if (thread === undefined) continue; // the thread ended meanwhile
    const kind: keyof ThreadCpu = tid === String(pid) ? 'eventLoop' : thread.name === 'WorkerThread' ? 'workers' : /^(V8Worker|v8:)/.test(thread.name) ? 'v8' : 'other';
    split[kind] += thread.micros;
  }
  return split;
}

/** The CPU `after` minus `before`, thread kind by thread kind (a thread that ended between the two readings lowers its kind's figure). */
export function threadCpuSpent(before: ThreadCpu | undefined, after: ThreadCpu | undefined): ThreadCpu | undefined {
  if (!before || !after) return undefined;
  return { eventLoop: after.eventLoop - before.eventLoop, workers: after.workers - before.workers, v8: after.v8 - before.v8, other: after.other - before.other };
}

/** User + system CPU time, in µs, of this process's children that have ended and been waited for (a load tool run with `spawnSync`), from `/proc/self/stat`; undefined without `/proc`. */
export function waitedChildrenCpuMicros(): number | undefined {
  return readStat('/proc/self/stat', [16, 17])?.micros;
}

/** CPU time of `pid` and of its direct children (nginx: master and workers), in µs. */
export function treeCpuMicros(pid: number | undefined): number | undefined {
  const own = cpuMicros(pid);
  if (own === undefined) return undefined;
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // no children file (older kernels): the master's own time only
  }
  return children.reduce((sum, child) => sum + (cpuMicros(child) ?? 0), own);
}

/** Runs `work` and returns its result with the CPU µs `measure` saw spent meanwhile (undefined when it cannot tell). */
export async function withCpu<T>(measure: () => number | undefined, work: () => Promise<T> | T): Promise<{ result: T; cpuMicros: number | undefined }> {
  const before = measure();
  const result = await work();
  const after = measure();
  return { result, cpuMicros: before === undefined || after === undefined ? undefined : after - before };
}
