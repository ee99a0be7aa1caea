import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryDeliveryQueue } from '../../../src/bridges/webhooks/memory-delivery-queue.ts';
import { SqliteDeliveryQueue } from '../../../src/bridges/webhooks/sqlite-delivery-queue.ts';
import { openSqlite } from '../../../src/storage/sqlite.ts';
import { tempDir } from '../../support/gateway.ts';
import { deliveryQueueContract, newDelivery } from './delivery-queue-contract.ts';

deliveryQueueContract('memory', () => new MemoryDeliveryQueue());
deliveryQueueContract('sqlite (file)', () => new SqliteDeliveryQueue(join(tempDir(), 'data', 'gateway.db')));
deliveryQueueContract('sqlite (:memory:)', () => new SqliteDeliveryQueue(':memory:'));

describe('SqliteDeliveryQueue', () => {
  it('keeps every delivery, its state and its lease across a reopen; an in-flight one is claimed again when its lease ends', async () => {
    const path = join(tempDir(), 'gateway.db');
    const first = new SqliteDeliveryQueue(path);
    await first.open();
    await first.enqueue([newDelivery('a', 'sub-a', 1), newDelivery('b', 'sub-a', 1)], 1);
    await first.claim(2, 1, 100);
    await first.close();
    const second = new SqliteDeliveryQueue(path);
    await second.open();
    expect(await second.counts()).toEqual({ pending: 1, 'in-flight': 1, succeeded: 0, dead: 0 });
    expect((await second.claim(3, 10, 100)).map((d) => d.id)).toEqual(['b']);
    expect((await second.claim(102, 10, 100)).map((d) => [d.id, d.attempts, d.reclaimed])).toEqual([['a', 2, true]]);
    await second.close();
  });

  it('brings a queue made before leased claims to the current shape: its in-flight deliveries are claimable at once', async () => {
    const path = join(tempDir(), 'gateway.db');
    const db = openSqlite(path);
    db.exec(`CREATE TABLE webhook_deliveries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, subscription_id TEXT NOT NULL,
      event_id TEXT NOT NULL, event_type TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
      next_attempt_ms INTEGER NOT NULL, last_error TEXT, last_status INTEGER, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL);
      CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_ms, seq, subscription_id, id);
      INSERT INTO webhook_deliveries (id, subscription_id, event_id, event_type, payload, status, attempts, next_attempt_ms, created_ms, updated_ms)
      VALUES ('a', 'sub-a', 'e-a', 'T', '{}', 'in-flight', 1, 1, 1, 1), ('b', 'sub-b', 'e-b', 'T', '{}', 'pending', 0, 5, 1, 1),
      ('c', 'sub-a', 'e-c', 'T', '{}', 'succeeded', 1, 1, 1, 1);`);
    db.close();
    const queue = new SqliteDeliveryQueue(path);
    await queue.open();
    expect((await queue.claim(10, 10, 100)).map((d) => [d.id, d.attempts, d.reclaimed])).toEqual([['a', 2, true], ['b', 1, false]]);
    await queue.close();
  });

  it('replaces the whole-table status indexes of earlier versions by one partial index per state, and the queue it finds keeps working', async () => {
    const path = join(tempDir(), 'gateway.db');
    const first = new SqliteDeliveryQueue(path);
    await first.open();
    await first.enqueue([newDelivery('a', 'sub-a', 1), newDelivery('b', 'sub-a', 1), newDelivery('c', 'sub-b', 1)], 1);
    const [a] = await first.claim(2, 1, 100);
    await first.finish([{ id: a!.id, claim: a!.claim, outcome: { status: 'succeeded' } }], 3);
    await first.close();
    // The layout before issue 28: every row in a (subscription, status, ...) and a (status, updated_ms) index.
    const db = openSqlite(path);
    db.exec(`CREATE INDEX webhook_deliveries_lane ON webhook_deliveries (subscription_id, status, next_attempt_ms, seq);
      CREATE INDEX webhook_deliveries_finished ON webhook_deliveries (status, updated_ms);
      DROP INDEX webhook_deliveries_pending; DROP INDEX webhook_deliveries_succeeded; DROP INDEX webhook_deliveries_dead;`);
    db.close();
    const second = new SqliteDeliveryQueue(path);
    await second.open();
    const check = openSqlite(path);
    const indexes = (check.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'webhook_deliveries' AND sql IS NOT NULL ORDER BY name`).all() as Array<{ name: string }>).map((r) => r.name);
    check.close();
    expect(indexes).toEqual(['webhook_deliveries_dead', 'webhook_deliveries_leases', 'webhook_deliveries_pending', 'webhook_deliveries_subscription', 'webhook_deliveries_succeeded']);
    expect(await second.counts()).toEqual({ pending: 2, 'in-flight': 0, succeeded: 1, dead: 0 });
    expect(await second.unfinished()).toBe(2);
    expect((await second.claim(4, 10, 100)).map((d) => d.id).sort()).toEqual(['b', 'c']);
    expect(await second.purge({ succeededBeforeMs: 10, deadBeforeMs: 10, maxDead: 100 })).toBe(1);
    expect(await second.counts()).toEqual({ pending: 0, 'in-flight': 2, succeeded: 0, dead: 0 });
    await second.close();
  });
});
