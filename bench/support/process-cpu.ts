/**
 * CPU time of another process, from `/proc/<pid>/stat` (Linux): user + system time of all its
 * threads (the SQLite writer thread included), and of its child processes when asked (nginx's
 * workers under its master). The steady figure of the end-to-end benchmarks: on a shared machine a
 * server's throughput moves with whatever else runs, its CPU time per request much less.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

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
