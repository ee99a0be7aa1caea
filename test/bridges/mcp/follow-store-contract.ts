/**
 * The contract every `FollowStore` adapter passes (memory, Redis): sessions bounded and expiring,
 * owned by one principal; follow lists ordered, bounded, with their delivery cursor.
 */
import { describe, expect, it } from 'vitest';
import type { FollowStore, FollowStoreLimits } from '../../../src/bridges/mcp/follow-store.ts';

/** Makes an open-able store with these limits. */
export type MakeFollowStore = (limits: FollowStoreLimits) => FollowStore;

const limits: FollowStoreLimits = { maxSessions: 2, idleTimeoutMs: 60_000, maxFollows: 3 };

async function opened(make: MakeFollowStore, override: Partial<FollowStoreLimits> = {}): Promise<FollowStore> {
  const store = make({ ...limits, ...override });
  await store.open();
  return store;
}

export function followStoreContract(name: string, make: MakeFollowStore): void {
  describe(`FollowStore contract: ${name}`, () => {
    it('opens sessions up to maxSessions, knows their principal, and forgets an ended one', async () => {
      const store = await opened(make);
      try {
        expect(await store.openSession('s1', 'alice')).toBe('opened');
        expect(await store.openSession('s2', 'bob')).toBe('opened');
        expect(await store.openSession('s3', 'carol')).toBe('full');
        expect(await store.sessionCount()).toBe(2);
        expect(await store.touchSession('s1')).toBe('alice');
        expect(await store.touchSession('nope')).toBeUndefined();
        await store.endSession('s1');
        await store.endSession('s1');
        expect(await store.touchSession('s1')).toBeUndefined();
        expect(await store.openSession('s3', 'carol')).toBe('opened');
      } finally {
        await store.close();
      }
    });

    it('holds one principal to maxSessionsPerPrincipal while others still open sessions', async () => {
      const store = await opened(make, { maxSessions: 4, maxSessionsPerPrincipal: 2 });
      try {
        expect(await store.openSession('a1', 'alice')).toBe('opened');
        expect(await store.openSession('a2', 'alice')).toBe('opened');
        expect(await store.openSession('a3', 'alice')).toBe('principal-full');
        expect(await store.openSession('b1', 'bob')).toBe('opened');
        await store.endSession('a1');
        expect(await store.openSession('a3', 'alice')).toBe('opened');
        expect(await store.sessionCount()).toBe(3);
      } finally {
        await store.close();
      }
    });

    it('expires a session idle for idleTimeout, with its follow list, freeing its place', async () => {
      const store = await opened(make, { idleTimeoutMs: 300, maxSessions: 1 });
      try {
        expect(await store.openSession('s1', 'alice')).toBe('opened');
        await store.follow('session:s1', 'c1', 5);
        await new Promise((resolve) => setTimeout(resolve, 400));
        expect(await store.touchSession('s1')).toBeUndefined();
        expect(await store.follows('session:s1')).toEqual([]);
        expect(await store.sessionCount()).toBe(0);
        expect(await store.openSession('s2', 'bob')).toBe('opened');
      } finally {
        await store.close();
      }
    });

    it('keeps follows in order, drops the oldest beyond maxFollows, records deliveries, and unfollows', async () => {
      const store = await opened(make);
      try {
        for (const [i, id] of ['c1', 'c2', 'c3', 'c4'].entries()) await store.follow('principal:alice', id, i * 10);
        expect((await store.follows('principal:alice')).map((f) => f.correlationId)).toEqual(['c2', 'c3', 'c4']);
        await store.delivered('principal:alice', 'c3', 'e-7');
        await store.delivered('principal:alice', 'c1', 'e-8');
        expect(await store.follows('principal:alice')).toEqual([
          { correlationId: 'c2', afterPosition: 10 },
          { correlationId: 'c3', afterPosition: 20, lastEventId: 'e-7' },
          { correlationId: 'c4', afterPosition: 30 },
        ]);
        await store.unfollow('principal:alice', 'c3');
        expect((await store.follows('principal:alice')).map((f) => f.correlationId)).toEqual(['c2', 'c4']);
        expect(await store.follows('principal:bob')).toEqual([]);
      } finally {
        await store.close();
      }
    });
  });
}
