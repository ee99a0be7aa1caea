import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryDeliveryQueue } from '../../../src/bridges/webhooks/memory-delivery-queue.ts';
import { SqliteDeliveryQueue } from '../../../src/bridges/webhooks/sqlite-delivery-queue.ts';
import { tempDir } from '../../support/gateway.ts';
import { deliveryQueueContract, newDelivery } from './delivery-queue-contract.ts';

deliveryQueueContract('memory', () => new MemoryDeliveryQueue());
deliveryQueueContract('sqlite (file)', () => new SqliteDeliveryQueue(join(tempDir(), 'data', 'gateway.db')));
deliveryQueueContract('sqlite (:memory:)', () => new SqliteDeliveryQueue(':memory:'));

describe('SqliteDeliveryQueue', () => {
  it('keeps every delivery and its state across a reopen; in-flight ones are found again', async () => {
    const path = join(tempDir(), 'gateway.db');
    const first = new SqliteDeliveryQueue(path);
    await first.open();
    await first.enqueue([newDelivery('a', 'sub-a', 1), newDelivery('b', 'sub-a', 1)], 1);
    await first.begin('a', 2);
    await first.close();
    const second = new SqliteDeliveryQueue(path);
    await second.open();
    expect(await second.counts()).toEqual({ pending: 1, 'in-flight': 1, succeeded: 0, dead: 0 });
    expect(await second.requeueInFlight(3)).toBe(1);
    expect((await second.due(3, 10, [])).map((d) => d.id)).toEqual(['b', 'a']);
    expect((await second.list('sub-a', { after: 0, limit: 10 })).deliveries.map((d) => [d.id, d.attempts])).toEqual([['a', 1], ['b', 0]]);
    await second.close();
  });
});
