import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { stdoutMetrics } from '../../src/metrics/stdout.ts';

describe('proto_gateway_stdout_lines_dropped_total', () => {
  it("counts the destination's dropped lines as they stand at each scrape, never twice", async () => {
    let dropped = 0;
    const registry = new Registry();
    stdoutMetrics(registry, { droppedLines: () => dropped });
    const scrape = async (): Promise<string> => (await registry.metrics()).match(/^proto_gateway_stdout_lines_dropped_total (\d+)$/m)![1];
    expect(await scrape()).toBe('0');
    dropped = 5;
    expect(await scrape()).toBe('5');
    expect(await scrape()).toBe('5');
    dropped = 12;
    expect(await scrape()).toBe('12');
  });
});
