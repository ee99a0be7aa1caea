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

/** User + system CPU time of `pid` (all threads), in µs; undefined where `/proc` is not there (not Linux) or the process is gone. */
export function cpuMicros(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, so split after its closing parenthesis):
    // state is field 3, utime field 14 and stime field 15 (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
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
  try {
    const split: ThreadCpu = { eventLoop: 0, workers: 0, v8: 0, other: 0 };
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      let stat: string;
      try {
        stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      } catch {
        continue; // the thread ended meanwhile
      }
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const micros = ((Number(fields[11]) + Number(fields[12])) * 1e6) / TICKS_PER_SECOND;
      const kind: keyof ThreadCpu = tid === String(pid) ? 'eventLoop' : name === 'WorkerThread' ? 'workers' : /^(V8Worker|v8:)/.test(name) ? 'v8' : 'other';
      split[kind] += micros;
    }
    return split;
  } catch {
    return undefined;
  }
}

/** The CPU `after` minus `before`, thread kind by thread kind (a thread that ended between the two readings lowers its kind's figure). */
export function threadCpuSpent(before: ThreadCpu | undefined, after: ThreadCpu | undefined): ThreadCpu | undefined {
  if (!before || !after) return undefined;
  return { eventLoop: after.eventLoop - before.eventLoop, workers: after.workers - before.workers, v8: after.v8 - before.v8, other: after.other - before.other };
}

/** User + system CPU time, in µs, of this process's children that have ended and been waited for (a load tool run with `spawnSync`), from `/proc/self/stat`; undefined without `/proc`. */
export function waitedChildrenCpuMicros(): number | undefined {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // cutime is field 16 and cstime field 17 (proc(5)).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[13]) + Number(fields[14])) * 1e6) / TICKS_PER_SECOND;
  } catch {
    return undefined;
  }
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
