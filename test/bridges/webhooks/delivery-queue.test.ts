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

  it('brings the layout of earlier versions (due indexes, a table of lanes, no done column) to the current one, and the queue it finds keeps working', async () => {
    const path = join(tempDir(), 'gateway.db');
    // The layout before the schedule in memory (issue 28), with a succeeded, an in-flight and two pending deliveries.
    previousLayout(path, `('a', 'sub-a', 'e-a', 'T', '{}', 'succeeded', 1, 1, 1, 3, 1, NULL), ('b', 'sub-a', 'e-b', 'T', '{}', 'pending', 0, 1, 1, 1, 0, NULL),
      ('c', 'sub-b', 'e-c', 'T', '{}', 'pending', 0, 1, 1, 1, 0, NULL), ('d', 'sub-b', 'e-d', 'T', '{}', 'in-flight', 1, 1, 1, 2, 3, 102)`);
    const second = new SqliteDeliveryQueue(path);
    await second.open();
    const check = openSqlite(path);
    const objects = (check.prepare(`SELECT name FROM sqlite_master WHERE type IN ('index', 'table') AND name LIKE 'webhook_deliver%' AND sql IS NOT NULL ORDER BY name`).all() as Array<{ name: string }>).map((r) => r.name);
    check.close();
    expect(objects).toEqual(['webhook_deliveries', 'webhook_deliveries_dead', 'webhook_deliveries_subscription', 'webhook_deliveries_succeeded', 'webhook_deliveries_unfinished']);
    expect(await second.counts()).toEqual({ pending: 2, 'in-flight': 1, succeeded: 1, dead: 0 });
    expect(await second.unfinished()).toBe(3);
    expect((await second.claim(4, 10, 100)).map((d) => d.id).sort()).toEqual(['b', 'c']);
    // The in-flight one keeps its lease and claim token: its claimer's outcome is taken, then it is claimed again when due.
    expect(await second.finish([{ id: 'd', claim: 3, outcome: { status: 'pending', nextAttemptMs: 50 } }], 5)).toEqual([true]);
    expect((await second.claim(50, 10, 100)).map((d) => [d.id, d.attempts, d.claim])).toEqual([['d', 2, 4]]);
    expect(await second.purge({ succeededBeforeMs: 10, deadBeforeMs: 10, maxDead: 100 })).toBe(1);
    expect(await second.counts()).toEqual({ pending: 0, 'in-flight': 3, succeeded: 0, dead: 0 });
    await second.close();
  });
  it('a migration refused halfway (its UPDATE of the finished rows) leaves the file as it was, and the next open migrates it whole: finished deliveries stay finished, a dead letter can be redelivered', async () => {
    const path = join(tempDir(), 'gateway.db');
    previousLayout(path, `('dead-1', 'sub-a', 'e-1', 'T', '{}', 'dead', 10, 1, 1, 3, 10, NULL), ('ok-1', 'sub-a', 'e-2', 'T', '{}', 'succeeded', 1, 1, 1, 3, 1, NULL)`);
    // The first open adds the column, then its UPDATE of the finished rows fails (a real SQLite error).
    const blocker = openSqlite(path);
    blocker.exec(`CREATE TRIGGER refuse_update BEFORE UPDATE ON webhook_deliveries BEGIN SELECT RAISE(ABORT, 'refused'); END`);
    const first = new SqliteDeliveryQueue(path);
    await expect(first.open()).rejects.toThrow(/refused/);
    blocker.exec('DROP TRIGGER refuse_update');
    blocker.close();
    // The operator starts the gateway again: it opens, and must see the file as the previous version left it.
    const queue = new SqliteDeliveryQueue(path);
    await queue.open();
    try {
      expect(await queue.unfinished()).toBe(0);
      expect(await queue.counts()).toEqual({ pending: 0, 'in-flight': 0, succeeded: 1, dead: 1 });
      // A dead letter from before the upgrade can be put back (`POST …/redeliver`), as any other.
      expect((await queue.redeliver('sub-a', 'dead-1', 10)).outcome).toBe('redelivered');
    } finally {
      await queue.close();
    }
  });

  it('builds its schedule again from the table when a write fails, so what the failed transaction claimed is claimable again', async () => {
    const path = join(tempDir(), 'gateway.db');
    const queue = new SqliteDeliveryQueue(path);
    await queue.open();
    await queue.enqueue([newDelivery('a', 'sub-a', 1), newDelivery('b', 'sub-b', 1)], 1);
    // A real SQLite failure in the middle of a claim: taking 'b' aborts the transaction that took 'a'.
    const other = openSqlite(path);
    other.exec(`CREATE TRIGGER refuse_b BEFORE UPDATE ON webhook_deliveries WHEN OLD.id = 'b' BEGIN SELECT RAISE(ABORT, 'refused'); END`);
    await expect(queue.claim(2, 10, 100)).rejects.toThrow(/refused/);
    other.exec('DROP TRIGGER refuse_b');
    other.close();
    expect((await queue.claim(3, 10, 100)).map((d) => [d.id, d.attempts])).toEqual([['a', 1], ['b', 1]]);
    await queue.close();
  });

  it('never claims a row that another connection claimed behind its back (its claim token moved): it drops it from its schedule', async () => {
    const path = join(tempDir(), 'gateway.db');
    const queue = new SqliteDeliveryQueue(path);
    await queue.open();
    await queue.enqueue([newDelivery('a', 'sub-a', 1), newDelivery('b', 'sub-a', 1)], 1);
    const other = openSqlite(path);
    other.exec(`UPDATE webhook_deliveries SET status = 'in-flight', attempts = 1, claim = claim + 1, lease_until_ms = 10000 WHERE id = 'a'`);
    other.close();
    expect((await queue.claim(2, 10, 100)).map((d) => d.id)).toEqual(['b']);
    // Long after every lease ended: only its own claim of 'b' comes back.
    expect((await queue.claim(20_000, 10, 100)).map((d) => [d.id, d.reclaimed])).toEqual([['b', true]]);
    expect(await queue.unfinished()).toBe(1);
    await queue.close();
  });
});

/**
 * A file in the delivery queue's layout before the schedule in memory (issue 28): a table of lanes,
 * an index of pending rows and one of leases, no `done` column; `rows` are the VALUES of its deliveries
 * (id, subscription, event id and type, payload, status, attempts, next attempt, created, updated,
 * claim, lease end), each subscription's lane ready at 1.
 */
function previousLayout(path: string, rows: string): void {
  const db = openSqlite(path);
  db.exec(`CREATE TABLE webhook_deliveries (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, subscription_id TEXT NOT NULL,
    event_id TEXT NOT NULL, event_type TEXT NOT NULL, payload TEXT NOT NULL, status TEXT NOT NULL, attempts INTEGER NOT NULL,
    next_attempt_ms INTEGER NOT NULL, last_error TEXT, last_status INTEGER, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,
    claim INTEGER NOT NULL DEFAULT 0, lease_until_ms INTEGER);
    CREATE TABLE webhook_delivery_lanes (subscription_id TEXT PRIMARY KEY, ready_ms INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX webhook_delivery_lanes_ready ON webhook_delivery_lanes (ready_ms, subscription_id);
    CREATE INDEX webhook_deliveries_subscription ON webhook_deliveries (subscription_id, seq);
    CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (subscription_id, next_attempt_ms, seq) WHERE status = 'pending';
    CREATE INDEX webhook_deliveries_leases ON webhook_deliveries (subscription_id, lease_until_ms, seq) WHERE status = 'in-flight';
    CREATE INDEX webhook_deliveries_succeeded ON webhook_deliveries (updated_ms) WHERE status = 'succeeded';
    CREATE INDEX webhook_deliveries_dead ON webhook_deliveries (updated_ms, seq) WHERE status = 'dead';
    INSERT INTO webhook_deliveries (id, subscription_id, event_id, event_type, payload, status, attempts, next_attempt_ms, created_ms, updated_ms, claim, lease_until_ms)
    VALUES ${rows};
    INSERT INTO webhook_delivery_lanes SELECT DISTINCT subscription_id, 1 FROM webhook_deliveries WHERE status IN ('pending', 'in-flight');`);
  db.close();
}
