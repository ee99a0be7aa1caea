/**
 * The contract every `SubscriptionStore` passes (memory, sqlite, later redis): one vitest suite, run
 * by `subscription-store.test.ts` with a factory of fresh, unopened, empty stores.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Recovery, Subscription, SubscriptionStore } from '../../../src/bridges/webhooks/SubscriptionStore.ts';

/** A running recovery `id` of subscription `subscriptionId`, and overrides. */
export function recovery(id: string, subscriptionId = 's1', overrides: Partial<Recovery> = {}): Recovery {
  return { id, subscriptionId, sinceMs: 1000, untilMs: 2000, endPosition: 50, position: 0, status: 'running', delivered: 0, createdMs: 10, updatedMs: 10, ...overrides };
}

/** A subscription with `id`, owned by `principal`, and overrides. */
export function subscription(id: string, principal = 'alice', overrides: Partial<Subscription> = {}): Subscription {
  return { id, principal, url: `https://hooks.example.com/${id}`, status: 'active', createdAt: '2030-01-01T00:00:00.000Z', afterPosition: 7, ...overrides };
}

/** Defines the contract suite for the store built by `make`. */
export function subscriptionStoreContract(name: string, make: () => SubscriptionStore | Promise<SubscriptionStore>): void {
  describe(`SubscriptionStore contract: ${name}`, () => {
    let store: SubscriptionStore;

    beforeEach(async () => {
      store = await make();
      await store.open();
      await store.open();
    });

    afterEach(async () => {
      await store.close();
      await store.close();
    });

    it('keeps every field as created, including optional ones', async () => {
      const full = subscription('s1', 'alice', { serviceId: 'orders', secret: 'whsec_c2VjcmV0', types: ['OrderPlacedV1', 'OrderShippedV1'], rateLimit: { perSecond: 2.5 }, grants: ['orders-admin', 'read'] });
      await store.create(full);
      await store.create(subscription('s2'));
      expect(await store.get('s1')).toEqual(full);
      expect(await store.get('s2')).toEqual(subscription('s2'));
      expect(await store.get('missing')).toBeUndefined();
    });

    it('refuses a second subscription with the same id', async () => {
      await store.create(subscription('s1'));
      await expect(store.create(subscription('s1', 'bob'))).rejects.toThrow();
      expect((await store.get('s1'))?.principal).toBe('alice');
    });

    it('lists one principal\'s subscriptions in creation order', async () => {
      for (const [id, who] of [['b', 'alice'], ['a', 'bob'], ['c', 'alice']]) await store.create(subscription(id, who));
      expect((await store.listByPrincipal('alice')).map((s) => s.id)).toEqual(['b', 'c']);
      expect((await store.listByPrincipal('bob')).map((s) => s.id)).toEqual(['a']);
      expect(await store.listByPrincipal('carol')).toEqual([]);
    });

    it('lists only active subscriptions for fan-out, and changes status', async () => {
      await store.create(subscription('s1'));
      await store.create(subscription('s2', 'bob'));
      expect(await store.setStatus('s1', 'disabled', { atMs: 1000, reason: 'gone' })).toBe(true);
      expect(await store.setStatus('missing', 'disabled', { atMs: 1000 })).toBe(false);
      expect((await store.listActive()).map((s) => s.id)).toEqual(['s2']);
      expect((await store.get('s1'))?.status).toBe('disabled');
    });

    it('keeps the state a subscription was created with: disabled, failing, a previous secret', async () => {
      const full = subscription('s1', 'alice', {
        secret: 'whsec_bmV3',
        status: 'disabled',
        disabled: { atMs: 1_764_000_000_123, reason: 'failing' },
        failing: { failures: 3, sinceMs: 1_763_000_000_456 },
        previousSecret: { secret: 'whsec_b2xk', untilMs: 1_765_000_000_789 },
      });
      await store.create(full);
      expect(await store.get('s1')).toEqual(full);
    });

    it('changes status only when it differs, tells only the writer that changed it, and records when and why it was disabled', async () => {
      await store.create(subscription('s1'));
      await store.recordAttempt('s1', false, 500);
      const [first, second] = await Promise.all([
        store.setStatus('s1', 'disabled', { atMs: 1000, reason: 'failing' }),
        store.setStatus('s1', 'disabled', { atMs: 2000, reason: 'gone' }),
      ]);
      expect([first, second].filter(Boolean)).toHaveLength(1);
      const disabled = (await store.get('s1'))!;
      expect(disabled.status).toBe('disabled');
      expect([1000, 2000]).toContain(disabled.disabled?.atMs);
      expect(await store.setStatus('s1', 'disabled', { atMs: 3000 })).toBe(false);
      expect(await store.listActive()).toEqual([]);
      expect(await store.setStatus('s1', 'active', { atMs: 4000 })).toBe(true);
      expect(await store.setStatus('s1', 'active', { atMs: 5000 })).toBe(false);
      const enabled = (await store.get('s1'))!;
      expect(enabled).toEqual(subscription('s1'));
      expect((await store.listActive()).map((s) => s.id)).toEqual(['s1']);
    });

    it('counts a failing streak atomically, and a success ends it and reports it once', async () => {
      await store.create(subscription('s1'));
      await store.create(subscription('s2'));
      expect(await store.recordAttempt('s1', true, 100)).toBeUndefined();
      expect(await store.recordAttempt('s1', false, 200)).toEqual({ failures: 1, sinceMs: 200 });
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.recordAttempt('s1', false, 300 + i)));
      expect(await store.recordAttempt('s1', false, 400)).toEqual({ failures: 22, sinceMs: 200 });
      expect((await store.get('s1'))?.failing).toEqual({ failures: 22, sinceMs: 200 });
      expect((await store.get('s2'))?.failing).toBeUndefined();
      const ends = await Promise.all([store.recordAttempt('s1', true, 500), store.recordAttempt('s1', true, 501)]);
      expect(ends.filter((e) => e !== undefined)).toEqual([{ failures: 22, sinceMs: 200 }]);
      expect((await store.get('s1'))?.failing).toBeUndefined();
      expect(await store.recordAttempt('missing', false, 600)).toBeUndefined();
    });

    it('rotates a secret: the old one stays as previous until its end, a second rotation drops the first, expired ones are deleted', async () => {
      await store.create(subscription('s1', 'alice', { secret: 'whsec_b25l' }));
      await store.create(subscription('s2', 'alice'));
      expect(await store.rotateSecret('s1', 'whsec_dHdv', 10_000)).toBe(true);
      expect(await store.get('s1')).toMatchObject({ secret: 'whsec_dHdv', previousSecret: { secret: 'whsec_b25l', untilMs: 10_000 } });
      expect(await store.rotateSecret('s1', 'whsec_dGhyZWU=', 20_000)).toBe(true);
      expect(await store.get('s1')).toMatchObject({ secret: 'whsec_dGhyZWU=', previousSecret: { secret: 'whsec_dHdv', untilMs: 20_000 } });
      expect(await store.rotateSecret('s2', 'whsec_Zmlyc3Q=', 30_000)).toBe(true);
      expect(await store.get('s2')).toEqual(subscription('s2', 'alice', { secret: 'whsec_Zmlyc3Q=' }));
      expect(await store.rotateSecret('missing', 'whsec_eA==', 1)).toBe(false);
      expect(await store.dropExpiredSecrets(19_999)).toBe(0);
      expect(await store.dropExpiredSecrets(20_000)).toBe(1);
      expect(await store.get('s1')).toEqual(subscription('s1', 'alice', { secret: 'whsec_dGhyZWU=' }));
      expect(await store.dropExpiredSecrets(99_999)).toBe(0);
    });

    it('keeps one running recovery per subscription: a second one is answered with the running one\'s id', async () => {
      expect(await store.startRecovery(recovery('r1', 's1', { goneUntilMs: 1500 }))).toBeUndefined();
      expect(await store.startRecovery(recovery('r2', 's1'))).toBe('r1');
      expect(await store.startRecovery(recovery('r3', 's2'))).toBeUndefined();
      expect(await store.getRecovery('r1')).toEqual(recovery('r1', 's1', { goneUntilMs: 1500 }));
      expect(await store.getRecovery('r2')).toBeUndefined();
    });

    it('leases a running recovery to one claimer at a time, takes it over when the lease ends, and frees the slot when it ends', async () => {
      await store.startRecovery(recovery('r1'));
      const claims = await Promise.all([store.claimRecovery('a', 100, 1000), store.claimRecovery('b', 100, 1000)]);
      expect(claims.filter((c) => c !== undefined).map((c) => c!.id)).toEqual(['r1']);
      const owner = claims[0] ? 'a' : 'b';
      const other = owner === 'a' ? 'b' : 'a';
      expect(await store.claimRecovery(other, 1099, 1000)).toBeUndefined();
      expect(await store.saveRecovery(recovery('r1', 's1', { position: 7, delivered: 3 }), other, 1099, 1000)).toBe(false);
      expect(await store.saveRecovery(recovery('r1', 's1', { position: 7, delivered: 3 }), owner, 1050, 1000)).toBe(true);
      expect(await store.claimRecovery(other, 2049, 1000)).toBeUndefined();
      const taken = await store.claimRecovery(other, 2050, 1000);
      expect(taken).toEqual(recovery('r1', 's1', { position: 7, delivered: 3 }));
      expect(await store.saveRecovery(recovery('r1', 's1', { position: 8 }), owner, 2060, 1000)).toBe(false);
      expect(await store.saveRecovery(recovery('r1', 's1', { position: 9 }), other, 2060, 1000, true)).toBe(true);
      expect((await store.claimRecovery(owner, 2061, 1000))?.position).toBe(9);
      expect(await store.saveRecovery(recovery('r1', 's1', { position: 50, status: 'completed', delivered: 40 }), owner, 2070, 1000)).toBe(true);
      expect(await store.claimRecovery(other, 99_999, 1000)).toBeUndefined();
      expect(await store.getRecovery('r1')).toMatchObject({ status: 'completed', delivered: 40 });
      expect(await store.startRecovery(recovery('r2', 's1'))).toBeUndefined();
    });

    it('deletes one, and every subscription of a service', async () => {
      await store.create(subscription('s1', 'alice', { serviceId: 'orders' }));
      await store.create(subscription('s2', 'bob', { serviceId: 'orders' }));
      await store.create(subscription('s3', 'alice', { serviceId: 'payments' }));
      await store.create(subscription('s4'));
      expect(await store.delete('s4')).toBe(true);
      expect(await store.delete('s4')).toBe(false);
      expect((await store.deleteByService('orders')).sort()).toEqual(['s1', 's2']);
      expect(await store.deleteByService('orders')).toEqual([]);
      expect((await store.listActive()).map((s) => s.id)).toEqual(['s3']);
    });

    it('returns copies: changing a returned subscription changes nothing stored', async () => {
      await store.create(subscription('s1', 'alice', { types: ['A'], grants: ['read'] }));
      const got = (await store.get('s1'))!;
      got.types!.push('B');
      got.grants!.push('admin');
      got.status = 'disabled';
      expect(await store.get('s1')).toMatchObject({ types: ['A'], grants: ['read'], status: 'active' });
    });
  });
}
