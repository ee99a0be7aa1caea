/**
 * The benchmark runner (`npm run bench`): runs every `*.bench.ts` in its own process, passes
 * `--quick` through, collects their JSON results into one summary, prints every `ratio` line at the
 * end, and exits non-zero when a benchmark crashes. Runs on two tiny benchmarks of its own.
 */
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/gateway.ts';

const runner = fileURLToPath(new URL('../../bench/run.ts', import.meta.url));
const report = new URL('../../bench/support/report.ts', import.meta.url).href;

function run(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', runner, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

describe('npm run bench', () => {
  it('runs each benchmark with --quick, gathers its JSON and ratio lines, and fails when one crashes', async () => {
    const benches = tempDir();
    const results = tempDir();
    writeFileSync(join(benches, 'a-ok.bench.ts'), `import { BenchReport, QUICK } from '${report}';
const bench = new BenchReport('a-ok');
bench.add({ name: QUICK ? 'quick figure' : 'full figure', unit: 'req/s', gateway: 50, baseline: 100, baselineName: 'baseline', better: 'higher' });
bench.write();
`);
    writeFileSync(join(benches, 'b-crash.bench.ts'), `throw new Error('boom');\n`);
    const env = { BENCH_DIR: benches, BENCH_RESULTS_DIR: results };

    const all = await run(['--quick'], env);
    expect(all.code).toBe(1);
    const summary = all.stdout.slice(all.stdout.indexOf('=== ratios'));
    expect(summary).toContain('ratio a-ok | quick figure | 0.50x | gateway 50.00 req/s | baseline 100 req/s | higher is better');
    const written = JSON.parse(readFileSync(join(results, 'summary.json'), 'utf8'));
    expect(written.quick).toBe(true);
    expect(written.benchmarks.map((b: any) => [b.name, b.exitCode])).toEqual([['a-ok', 0], ['b-crash', 1]]);
    expect(written.benchmarks[0].result.figures[0]).toMatchObject({ name: 'quick figure', ratio: 0.5 });

    const one = await run(['a-ok'], env);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('ratio a-ok | full figure');
    expect(one.stdout).not.toContain('b-crash');
  }, 60_000);
});
