/**
 * The contract every `DeliveryRateLimit` passes (memory, redis): strict spacing per subscription,
 * one slot per interval even to concurrent callers, subscriptions independent.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DeliveryRateLimit } from '../../../src/bridges/webhooks/DeliveryRateLimit.ts';

/** Defines the contract suite for the limiter built by `make`. */
export function deliveryRateLimitContract(name: string, make: () => DeliveryRateLimit): void {
  describe(`DeliveryRateLimit contract: ${name}`, () => {
    let limiter: DeliveryRateLimit;
    beforeEach(async () => {
      limiter = make();
      await limiter.open();
      await limiter.open();
    });
    afterEach(async () => {
      await limiter.close();
      await limiter.close();
    });

    it('gives one slot per interval, even to concurrent callers, and says how long until the next', async () => {
      const answers = await Promise.all(Array.from({ length: 5 }, () => limiter.reserve('s1', 2)));
      expect(answers.filter((wait) => wait === 0)).toHaveLength(1);
      for (const wait of answers.filter((w) => w > 0)) expect(wait).toBeLessThanOrEqual(500);
      expect(await limiter.reserve('s2', 2)).toBe(0);
      const wait = await limiter.reserve('s1', 2);
      expect(wait).toBeGreaterThan(0);
      await new Promise((resolve) => setTimeout(resolve, wait + 5));
      expect(await limiter.reserve('s1', 2)).toBe(0);
    });
  });
}
