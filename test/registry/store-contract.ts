/**
 * The contract every `RegistryStore` passes (memory, sqlite): one vitest suite, run by
 * `store.test.ts` with a factory of fresh, unopened, empty stores.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RegisteredService, RegistryStore } from '../../src/registry/RegistryStore.ts';

/** A registered service with `id` and overrides. */
export function registered(id: string, overrides: Partial<RegisteredService> = {}): RegisteredService {
  return { id, name: `com.test.${id}`, registeredAt: '2030-01-01T00:00:00.000Z', updatedAt: '2030-01-01T00:00:00.000Z', ...overrides };
}

/** Defines the contract suite for the store built by `make`. */
export function registryStoreContract(name: string, make: () => RegistryStore | Promise<RegistryStore>): void {
  describe(`RegistryStore contract: ${name}`, () => {
    let store: RegistryStore;

    beforeEach(async () => {
      store = await make();
      await store.open();
      await store.open();
    });

    afterEach(async () => {
      await store.close();
      await store.close();
    });

    it('keeps every field as put, optional ones included', async () => {
      const full = registered('a', {
        description: 'A', version: '1.2.3', type: 'agent', endpoint: 'http://10.0.0.1:8080/api',
        accepts: ['DoThing'], produces: ['ThingDoneV1'], metadata: { owner: 'team-a', tags: ['x'] },
      });
      await store.put(full);
      await store.put(registered('b'));
      expect(await store.list()).toEqual([full, registered('b')]);
    });

    it('an upsert replaces the fields and keeps the place in the list', async () => {
      await store.put(registered('a'));
      await store.put(registered('b'));
      await store.put(registered('a', { description: 'now described', updatedAt: '2030-01-02T00:00:00.000Z' }));
      expect((await store.list()).map((s) => [s.id, s.description])).toEqual([['a', 'now described'], ['b', undefined]]);
    });

    it('deletes a service (false when absent) and its paused mark', async () => {
      await store.put(registered('a'));
      await store.setPaused('a', true);
      expect(await store.delete('a')).toBe(true);
      expect(await store.delete('a')).toBe(false);
      expect(await store.list()).toEqual([]);
      expect(await store.pausedIds()).toEqual([]);
    });

    it('keeps paused marks of any id, set twice or cleared twice without harm', async () => {
      await store.setPaused('configured-one', true);
      await store.setPaused('configured-one', true);
      await store.setPaused('other', true);
      expect((await store.pausedIds()).sort()).toEqual(['configured-one', 'other']);
      await store.setPaused('other', false);
      await store.setPaused('other', false);
      expect(await store.pausedIds()).toEqual(['configured-one']);
    });

    it('hands out copies: changing a listed service changes nothing stored', async () => {
      await store.put(registered('a', { metadata: { n: 1 } }));
      const [listed] = await store.list();
      (listed.metadata as { n: number }).n = 2;
      expect((await store.list())[0].metadata).toEqual({ n: 1 });
    });
  });
}
