import { describe, expect, it } from 'vitest';
import { backoffDelay } from '../../src/ingest/backoff.ts';

describe('backoffDelay', () => {
  it('doubles from the interval up to the ceiling, jittered within the upper half', () => {
    const low = () => 0;
    const high = () => 0.999999;
    expect([1, 2, 3, 4].map((attempt) => backoffDelay(attempt, 1000, 30_000, low))).toEqual([500, 1000, 2000, 4000]);
    expect(backoffDelay(3, 1000, 30_000, high)).toBe(4000);
    expect(backoffDelay(20, 1000, 30_000, low)).toBe(15_000);
    expect(backoffDelay(20, 1000, 30_000, high)).toBe(30_000);
    expect(backoffDelay(10_000, 1000, 30_000, high)).toBe(30_000);
  });
});
