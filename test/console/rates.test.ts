import { describe, expect, it } from 'vitest';
import { quantileBetween, rateBetween, sparklinePoints, type Bucket, type StatusSample } from '../../console/src/rates.ts';

function sample(atMs: number, commands: number, events: number, buckets: Bucket[]): StatusSample {
  return { atMs, counters: { commandsAccepted: commands, eventsAppended: events }, commandLatency: { buckets, count: buckets.at(-1)?.[1] ?? 0, sum: 0 } };
}

describe('console rates from /status counters', () => {
  it('turns counter differences into per-second rates', () => {
    const point = rateBetween(sample(1_000, 10, 100, []), sample(3_000, 30, 160, []));
    expect(point.commandsPerSecond).toBe(10);
    expect(point.eventsPerSecond).toBe(30);
    expect(point.p99Seconds).toBeNull();
  });

  it('counts a counter that went down (a restart) from zero', () => {
    expect(rateBetween(sample(0, 500, 0, []), sample(1_000, 4, 0, [])).commandsPerSecond).toBe(4);
  });

  it('takes the p99 of the observations between two snapshots, interpolated inside the bucket', () => {
    const before: Bucket[] = [[0.01, 100], [0.1, 100], [1, 100], ['+Inf', 100]];
    // 100 new observations: 90 up to 10 ms, 10 between 100 ms and 1 s.
    const after: Bucket[] = [[0.01, 190], [0.1, 190], [1, 200], ['+Inf', 200]];
    expect(quantileBetween(0.99, before, after)).toBeCloseTo(0.1 + 0.9 * (9 / 10));
    expect(quantileBetween(0.5, before, after)).toBeCloseTo(0.01 * (50 / 90));
  });

  it('gives the last finite bound when the quantile falls in +Inf, and null without new observations', () => {
    const before: Bucket[] = [[0.5, 0], ['+Inf', 0]];
    expect(quantileBetween(0.99, before, [[0.5, 1], ['+Inf', 10]])).toBe(0.5);
    expect(quantileBetween(0.99, before, before)).toBeNull();
  });

  it('draws a sparkline scaled to its largest value, one value as a level line', () => {
    expect(sparklinePoints([0, 5, 10], 100, 20)).toBe('0,20 50,10 100,0');
    expect(sparklinePoints([null, 0], 100, 20)).toBe('0,20 100,20');
    expect(sparklinePoints([3], 100, 20)).toBe('0,0 100,0');
    expect(sparklinePoints([], 100, 20)).toBe('');
  });
});
