/**
 * The end-to-end benchmarks' CPU split by thread (`bench/support/process-cpu.ts`): a real child
 * process whose event loop spins while its worker thread spins harder is read from `/proc`, and each
 * kind of thread gets its own time (the commands benchmark tells the event loop from the SQLite
 * writer this way), and the CPU of a load tool that ran to its end is counted.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { cpuMicros, threadCpuMicros, threadCpuSpent, waitedChildrenCpuMicros } from '../../bench/support/process-cpu.ts';

const SPIN = `
const { Worker } = require('node:worker_threads');
const spin = (ms) => { const end = Date.now() + ms; while (Date.now() < end); };
new Worker("const end = Date.now() + 20000; while (Date.now() < end);", { eval: true });
process.stdout.write('started\\n');
const tick = () => { spin(10); setTimeout(tick, 30); };
tick();
setTimeout(() => process.exit(0), 20000);
`;

describe('CPU by thread of another process', () => {
  it('gives the event loop and a worker thread their own time, adding up to the process total', async () => {
    const child = spawn(process.execPath, ['-e', SPIN], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await once(child.stdout!, 'data');
      const before = threadCpuMicros(child.pid);
      const totalBefore = cpuMicros(child.pid)!;
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const after = threadCpuMicros(child.pid);
      const total = cpuMicros(child.pid)! - totalBefore;
      const spent = threadCpuSpent(before, after)!;
      // The worker spins all the time, the event loop a quarter of it: both are seen, apart.
      expect(spent.workers).toBeGreaterThan(200_000);
      expect(spent.eventLoop).toBeGreaterThan(20_000);
      expect(spent.workers).toBeGreaterThan(spent.eventLoop);
      // The kinds add up to the process's own figure (read a moment apart: within a few clock ticks).
      const sum = spent.eventLoop + spent.workers + spent.v8 + spent.other;
      expect(Math.abs(sum - total)).toBeLessThan(100_000);
    } finally {
      child.kill();
    }
  });

  it("counts a load tool's CPU once it has run to its end (spawnSync waits for it)", () => {
    const before = waitedChildrenCpuMicros()!;
    // Spins until it has used 300 ms of CPU, however busy the machine is.
    spawnSync(process.execPath, ['-e', 'while (process.cpuUsage().user + process.cpuUsage().system < 300_000);']);
    expect(waitedChildrenCpuMicros()! - before).toBeGreaterThanOrEqual(250_000);
  });

  it('answers undefined for a process that is not there', () => {
    expect(threadCpuMicros(undefined)).toBeUndefined();
    expect(threadCpuMicros(2 ** 22 + 12_345)).toBeUndefined();
    expect(threadCpuSpent(undefined, { eventLoop: 1, workers: 0, v8: 0, other: 0 })).toBeUndefined();
  });
});
