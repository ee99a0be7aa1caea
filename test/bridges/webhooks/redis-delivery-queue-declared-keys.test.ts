/**
 * The Redis delivery queue declares every key its scripts touch (issue 23, item 9), so it reads
 * them first; these cases change the queue between that read and the script (another replica's
 * write, run from inside `RedisScript.run`) and check the queue reads again and does the rest, under
 * the declared-keys check (a script touching a key it did not declare fails).
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RedisDeliveryQueue } from '../../../src/bridges/webhooks/redis-delivery-queue.ts';
import { taggedPrefix } from '../../../src/storage/redis.ts';
import { RedisScript } from '../../../src/storage/redis-script.ts';
import { checkDeclaredKeys } from '../../support/declared-keys.ts';
import { deletingPrefixOnClose, randomPrefix, SHARED_REDIS_URL, withReplicas } from '../../support/redis.ts';
import { newDelivery } from './delivery-queue-contract.ts';

checkDeclaredKeys();

const T = 1_000_000;

/** Two replicas of one fresh queue, opened for `body` and closed after it; the keys are deleted. */
async function twoReplicas(body: (one: RedisDeliveryQueue, two: RedisDeliveryQueue) => Promise<void>): Promise<void> {
  const prefix = taggedPrefix(randomPrefix());
  const two = deletingPrefixOnClose(new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix }), prefix);
  await withReplicas(new RedisDeliveryQueue({ url: SHARED_REDIS_URL, prefix }), two, body);
}

/** Runs `change` once, just before the next script runs (after the queue read what it declares). */
function beforeNextScript(change: () => Promise<unknown>): void {
  const run = RedisScript.prototype.run;
  const spy = vi.spyOn(RedisScript.prototype, 'run').mockImplementationOnce(async function (this: RedisScript, ...args) {
    spy.mockRestore();
    await change();
    return run.apply(this, args);
  });
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('RedisDeliveryQueue under the declared-keys check, the queue changing between its read and its script', () => {
  it('a claim that meets a subscription made ready after it read the queue claims it too, in the order they became due', async () => {
    await twoReplicas(async (one, two) => {
      await one.enqueue([newDelivery('a', 'sub-1', T)], T);
      beforeNextScript(() => two.enqueue([newDelivery('b', 'sub-2', T - 5)], T));
      expect((await one.claim(T + 1, 10, 60_000)).map((d) => d.id)).toEqual(['b', 'a']);
      expect((await one.counts())['in-flight']).toBe(2);
    });
  });

  it('a claim that meets deliveries enqueued after it read its subscription claims them too, up to the cap', async () => {
    await twoReplicas(async (one, two) => {
      await one.enqueue([newDelivery('a', 'sub-1', T)], T);
      beforeNextScript(() => two.enqueue(['b', 'c', 'd', 'e'].map((id) => newDelivery(id, 'sub-1', T - 5)), T));
      expect((await one.claim(T + 1, 10, 60_000)).map((d) => d.id)).toEqual(['b', 'c', 'd', 'e']);
    });
  });

  it('a settle whose claim meets a subscription made ready meanwhile records the outcome and claims it too', async () => {
    await twoReplicas(async (one, two) => {
      await one.enqueue([newDelivery('a', 'sub-1', T)], T);
      const [a] = await one.claim(T, 10, 60_000);
      beforeNextScript(() => two.enqueue([newDelivery('b', 'sub-2', T - 5)], T));
      const settled = await one.settle([{ id: 'a', claim: a!.claim, outcome: { status: 'succeeded' } }], T + 1, 10, 60_000);
      expect(settled.recorded).toEqual([true]);
      expect(settled.claimed.map((d) => d.id)).toEqual(['b']);
    });
  });

  it('a replica finishes and releases a claim another replica made (it reads the delivery\'s subscription)', async () => {
    await twoReplicas(async (one, two) => {
      await one.enqueue([newDelivery('a', 'sub-1', T), newDelivery('b', 'sub-1', T)], T);
      const [a, b] = await one.claim(T, 10, 60_000);
      expect(await two.finish([{ id: 'a', claim: a!.claim, outcome: { status: 'dead', lastError: 'gone' } }], T + 1)).toEqual([true]);
      expect(await two.release([{ id: 'b', claim: b!.claim }], T + 1)).toBe(1);
      expect(await one.counts()).toEqual({ pending: 1, 'in-flight': 0, succeeded: 0, dead: 1 });
    });
  });

  it('of two replicas claiming at once, never both get one delivery, and together they hold at most 4 per subscription', async () => {
    await twoReplicas(async (one, two) => {
      await one.enqueue(Array.from({ length: 40 }, (_, i) => newDelivery(`d${i}`, `sub-${i % 5}`, T)), T);
      const claims = await Promise.all([one.claim(T + 1, 15, 60_000), two.claim(T + 1, 15, 60_000), one.claim(T + 1, 15, 60_000), two.claim(T + 1, 15, 60_000)]);
      const claimed = claims.flat();
      expect(new Set(claimed.map((d) => d.id)).size).toBe(claimed.length);
      expect([...Map.groupBy(claimed, (d) => d.subscriptionId).values()].map((list) => list.length)).toEqual([4, 4, 4, 4, 4]);
    });
  });

  it('cancels and purges more deliveries than one script is given (read and run in batches)', async () => {
    await twoReplicas(async (one, two) => {
      await one.enqueue(Array.from({ length: 1_100 }, (_, i) => newDelivery(`p${i}`, 'sub-1', T)), T);
      expect(await one.cancelPending('sub-1')).toBe(1_100);
      await one.enqueue(Array.from({ length: 1_100 }, (_, i) => newDelivery(`d${i}`, 'sub-2', T)), T);
      for (let round = 0; round < 1_100 / 4; round++) {
        const claimed = await one.claim(T, 4, 60_000);
        await one.finish(claimed.map((d) => ({ id: d.id, claim: d.claim, outcome: { status: 'dead' as const } })), T);
      }
      expect(await one.counts()).toEqual({ pending: 0, 'in-flight': 0, succeeded: 0, dead: 1_100 });
      expect(await two.purge({ succeededBeforeMs: 0, deadBeforeMs: 0, maxDead: 50 })).toBe(1_050);
      expect(await one.counts()).toMatchObject({ dead: 50 });
      expect(await one.deleteSubscription('sub-2')).toBe(50);
    });
  });
});
