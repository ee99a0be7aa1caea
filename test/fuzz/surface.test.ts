/**
 * The whole-surface fuzz suite, bounded for `npm test` (`FUZZ_COUNT`, default 400 inputs, about a
 * minute): every transport of a spawned gateway with a protocol and a legacy backend. Long runs:
 * `npm run fuzz -- --count 10000` (README, Fuzzing).
 */
import { describe, expect, it } from 'vitest';
import { runSurfaceFuzz } from './surface.ts';

describe('whole-surface fuzz', () => {
  it('survives generated inputs on every transport: no crash, no 5xx, error bodies on refusals, no hang, bounded RSS', async () => {
    const report = await runSurfaceFuzz({
      count: Number(process.env.FUZZ_COUNT ?? 400),
      ...(process.env.FUZZ_SEED && { seed: Number(process.env.FUZZ_SEED) }),
      log: (line) => console.log(line),
    });
    expect(report.failure).toBeUndefined();
    expect(Object.keys(report.byTransport).sort()).toEqual(['a2a', 'grpc', 'grpc-corrupt', 'grpc-subscribe', 'http', 'http-commands', 'mcp', 'pass-through', 'sse', 'subscriptions', 'webhook-operations']);
  }, 240_000);
});
