/**
 * The contract every `SubscriptionStore` passes (memory, sqlite, later redis): one vitest suite, run
 * by `subscription-store.test.ts` with a factory of fresh, unopened, empty stores.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Subscription, SubscriptionStore } from '../../../src/bridges/webhooks/SubscriptionStore.ts';

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
      const full = subscription('s1', 'alice', { serviceId: 'orders', secret: 'whsec_c2VjcmV0', types: ['OrderPlacedV1', 'OrderShippedV1'] });
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
      expect(await store.setStatus('s1', 'disabled')).toBe(true);
      expect(await store.setStatus('missing', 'disabled')).toBe(false);
      expect((await store.listActive()).map((s) => s.id)).toEqual(['s2']);
      expect((await store.get('s1'))?.status).toBe('disabled');
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
      await store.create(subscription('s1', 'alice', { types: ['A'] }));
      const got = (await store.get('s1'))!;
      got.types!.push('B');
      got.status = 'disabled';
      expect(await store.get('s1')).toMatchObject({ types: ['A'], status: 'active' });
    });
  });
}
