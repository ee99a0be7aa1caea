/**
 * Runs the whole-surface fuzz: `count` generated inputs (`cases.ts`) against one spawned target
 * (`target.ts`), one at a time. Stops at the first finding; fast-check prints the seed and path
 * that replay it (`npm run fuzz -- --seed S --path P`). After every input the process must be
 * alive; its RSS is sampled and must stay within `RSS_HEADROOM` of where it started.
 */
import fc from 'fast-check';
import { anyCase, makeClients } from './cases.ts';
import { startFuzzTarget } from './target.ts';

/** How far the gateway's RSS may grow over the run before it counts as unbounded, in bytes. */
export const RSS_HEADROOM = 400 * 1024 * 1024;

export interface FuzzOptions {
  count: number;
  seed?: number;
  path?: string;
  log?: (line: string) => void;
}

export interface FuzzReport {
  seed: number;
  inputs: number;
  byTransport: Record<string, number>;
  rssStartBytes: number;
  rssMaxBytes: number;
  /** Undefined when every property held. */
  failure?: string;
  durationMs: number;
}

export async function runSurfaceFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const log = options.log ?? (() => undefined);
  const seed = options.seed ?? Date.now() ^ (Math.random() * 0x7fffffff);
  log(`fuzz: seed ${seed}, ${options.count} inputs`);
  const started = Date.now();
  const target = await startFuzzTarget();
  const clients = makeClients(target.grpcPort);
  const byTransport: Record<string, number> = {};
  const rssStartBytes = target.rss();
  let rssMaxBytes = rssStartBytes;
  let inputs = 0;
  let failure: string | undefined;
  try {
    const property = fc.asyncProperty(anyCase, async (input) => {
      inputs += 1;
      byTransport[input.transport] = (byTransport[input.transport] ?? 0) + 1;
      const finding = await input.run(target, clients);
      if (target.exited()) throw new Error(`the gateway died (${target.exited()}) on ${input.transport}: ${input.describe}\n${target.stderr().slice(-3000)}`);
      if (finding) throw new Error(`${input.transport}: ${finding}\n  input: ${input.describe}`);
      if (inputs % 50 === 0) {
        rssMaxBytes = Math.max(rssMaxBytes, target.rss());
        if (rssMaxBytes > rssStartBytes + RSS_HEADROOM) throw new Error(`RSS grew from ${mb(rssStartBytes)} to ${mb(rssMaxBytes)}`);
      }
      if (inputs % 1000 === 0) log(`fuzz: ${inputs} inputs, RSS ${mb(target.rss())}`);
    });
    const result = await fc.check(property, { numRuns: options.count, seed, ...(options.path && { path: options.path }), endOnFailure: true });
    if (result.failed) failure = `${String((result.errorInstance as Error | undefined)?.message ?? '')}\n${fc.defaultReportMessage(result) ?? 'failed'}`;
  } finally {
    rssMaxBytes = Math.max(rssMaxBytes, target.exited() ? 0 : target.rss());
    clients.close();
    await target.close();
  }
  const report = { seed, inputs, byTransport, rssStartBytes, rssMaxBytes, failure, durationMs: Date.now() - started };
  log(`fuzz: ${inputs} inputs in ${Math.round(report.durationMs / 1000)} s, by transport ${JSON.stringify(byTransport)}, RSS ${mb(rssStartBytes)} -> max ${mb(rssMaxBytes)}, ${failure ? 'FAILED' : '0 findings'}`);
  return report;
}

function mb(bytes: number): string {
  return `${Math.round(bytes / 1024 / 1024)} MB`;
}
