/**
 * What every benchmark shares: the `--quick` switch, and its report: one `ratio` line per figure
 * (the gateway against the baseline measured in the same run, with both absolute numbers) on
 * stdout, and the same figures as JSON in `bench/results/{name}.json` (or `$BENCH_RESULTS_DIR`),
 * which `bench/run.ts` collects.
 *
 * A ratio line reads `ratio <bench> | <figure> | <gateway/baseline> | gateway <v> <unit> | <baseline name> <b> <unit> | <higher|lower> is better`.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** True when the run is the short one (`--quick`): every benchmark then finishes in well under 30 s. */
export const QUICK = process.argv.includes('--quick');

/** Picks the full or the quick value of a parameter. */
export function sized<T>(full: T, quick: T): T {
  return QUICK ? quick : full;
}

/** One figure: the gateway's number and the baseline's, measured in the same run. */
export interface Figure {
  name: string;
  unit: string;
  gateway: number;
  baseline: number;
  /** What the baseline is (e.g. "raw node:sqlite", "minimal broadcaster"). */
  baselineName: string;
  /** Whether a larger number is better (throughput) or a smaller one (latency, memory). */
  better: 'higher' | 'lower';
  /** gateway / baseline; undefined when the baseline is 0 or missing. */
  ratio?: number;
}

/** Where JSON results go: `$BENCH_RESULTS_DIR`, default `bench/results/`. */
export function resultsDir(): string {
  return process.env.BENCH_RESULTS_DIR ?? fileURLToPath(new URL('../results/', import.meta.url));
}

/** The machine a run happened on (recorded with every result). */
export function machine(): Record<string, unknown> {
  const cores = cpus();
  return { node: process.version, platform: process.platform, arch: process.arch, cpus: cores.length, cpuModel: cores[0]?.model, memoryGiB: Math.round(totalmem() / 2 ** 30) };
}

/** Collects a benchmark's figures, prints each as a `ratio` line, and writes them as JSON at the end. */
export class BenchReport {
  readonly #name: string;
  readonly #figures: Figure[] = [];
  readonly #started = new Date();

  /** `name` is the benchmark's file name without `.bench.ts` (e.g. `event-log`). */
  constructor(name: string) {
    this.#name = name;
  }

  /** Adds a figure and prints its `ratio` line at once. */
  add(figure: Omit<Figure, 'ratio'>): void {
    const ratio = figure.baseline > 0 && Number.isFinite(figure.gateway) ? figure.gateway / figure.baseline : undefined;
    const full: Figure = { ...figure, ratio };
    this.#figures.push(full);
    console.log(ratioLine(this.#name, full));
  }

  /** Writes `{resultsDir}/{name}.json`; returns its path. */
  write(extra: Record<string, unknown> = {}): string {
    const dir = resultsDir();
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `${this.#name}.json`);
    const result = { bench: this.#name, quick: QUICK, startedAt: this.#started.toISOString(), finishedAt: new Date().toISOString(), machine: machine(), ...extra, figures: this.#figures };
    writeFileSync(file, `${JSON.stringify(result, null, 2)}\n`);
    return file;
  }
}

/** The printed form of a figure. */
export function ratioLine(bench: string, f: Figure): string {
  const n = (v: number): string => (Math.abs(v) >= 100 ? v.toFixed(0) : v.toFixed(Math.abs(v) >= 1 ? 2 : 4));
  const ratio = f.ratio === undefined ? 'n/a' : `${f.ratio.toFixed(2)}x`;
  return `ratio ${bench} | ${f.name} | ${ratio} | gateway ${n(f.gateway)} ${f.unit} | ${f.baselineName} ${n(f.baseline)} ${f.unit} | ${f.better} is better`;
}
