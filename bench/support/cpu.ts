/**
 * CPU time of a process from `/proc/<pid>/stat` (Linux): user + system time, fields 14 and 15, in
 * clock ticks (`CLK_TCK`, 100 a second on Linux). What the webhooks-e2e benchmark compares: the
 * gateway process's CPU per delivered webhook against a process sending the same signed POSTs.
 */
import { readFileSync } from 'node:fs';

/** Clock ticks per second of `/proc/<pid>/stat` (`getconf CLK_TCK`: 100 on Linux). */
export const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system) the process `pid` has used so far, ms. */
export function cpuMs(pid: number | 'self'): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) is in parentheses and may hold spaces: count fields after its end.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS_PER_SECOND;
}

/** The median of `values`. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
