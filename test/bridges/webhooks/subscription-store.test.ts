import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemorySubscriptionStore } from '../../../src/bridges/webhooks/memory-subscription-store.ts';
import { SqliteSubscriptionStore } from '../../../src/bridges/webhooks/sqlite-subscription-store.ts';
import { tempDir } from '../../support/gateway.ts';
import { subscription, subscriptionStoreContract } from './subscription-store-contract.ts';

subscriptionStoreContract('memory', () => new MemorySubscriptionStore());
subscriptionStoreContract('sqlite (file)', () => new SqliteSubscriptionStore(join(tempDir(), 'data', 'gateway.db')));
subscriptionStoreContract('sqlite (:memory:)', () => new SqliteSubscriptionStore(':memory:'));

describe('SqliteSubscriptionStore', () => {
  it('keeps subscriptions across a reopen of the file', async () => {
    const path = join(tempDir(), 'gateway.db');
    const first = new SqliteSubscriptionStore(path);
    await first.open();
    await first.create(subscription('s1', 'alice', { secret: 'x', types: ['OrderPlacedV1'] }));
    await first.close();
    const second = new SqliteSubscriptionStore(path);
    await second.open();
    expect(await second.get('s1')).toEqual(subscription('s1', 'alice', { secret: 'x', types: ['OrderPlacedV1'] }));
    await second.close();
  });
});
