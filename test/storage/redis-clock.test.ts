/**
 * `RedisClock`: the offset between this process's clock and Redis's follows a clock step but not
 * round-trip jitter, so a time translated in one call compares exactly with one translated later.
 */
import { describe, expect, it } from 'vitest';
import { OFFSET_TOLERANCE_MS, RedisClock } from '../../src/storage/redis-clock.ts';

describe('RedisClock', () => {
  it('translates by the offset read from TIME, both ways', () => {
    const clock = new RedisClock(() => 1_000);
    clock.observe(61_000, 1_000, 1_000, true);
    expect(clock.toRedis(1_000)).toBe(61_000);
    expect(clock.fromRedis(61_000)).toBe(1_000);
  });

  it('keeps its offset through jitter within the bracket and the tolerance, and takes a clock step', () => {
    const clock = new RedisClock();
    clock.observe(10_000, 10_000, 10_000, true);
    // A slow round trip: Redis's reading anywhere between the local ones; nothing moves.
    clock.observe(20_300, 20_000, 20_900);
    clock.observe(30_000 + OFFSET_TOLERANCE_MS, 30_000, 30_000);
    expect(clock.toRedis(5)).toBe(5);
    // The local clock jumped 5 s ahead (or Redis's back): the offset follows.
    clock.observe(40_000, 45_000, 45_010);
    expect(clock.toRedis(45_005)).toBe(40_000);
  });
});
