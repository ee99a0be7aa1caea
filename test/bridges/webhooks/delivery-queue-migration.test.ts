/**
 * The migration to the `done` column (`ALTER TABLE … ADD COLUMN done`, then `UPDATE … SET done = 1`
 * for finished rows) runs only while the column is missing, so it must be all or nothing: a first
 * open whose UPDATE fails (here a real SQLite refusal; a kill between the two alike) must leave no
 * column behind, or the next open would never mark the finished rows (found by the review of
 * b2c6095: they were scheduled as pending at every open).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteDeliveryQueue } from '../../../src/bridges/webhooks/sqlite-delivery-queue.ts';
import { openSqlite } from '../../../src/storage/sqlite.ts';
import { tempDir } from '../../support/gateway.ts';

/** A file in the layout before issue 28 (lanes table, due indexes, no `done`) with one dead and one succeeded delivery. */
function previousLayout(path: string): void {
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
    VALUES ('dead-1', 'sub-a', 'e-1', 'T', '{}', 'dead', 10, 1, 1, 3, 10, NULL), ('ok-1', 'sub-a', 'e-2', 'T', '{}', 'succeeded', 1, 1, 1, 3, 1, NULL);`);
  db.close();
}

describe('SqliteDeliveryQueue migration to the done column', () => {
  it('a migration refused halfway (its UPDATE of the finished rows) leaves the file as it was, and the next open migrates it whole: finished deliveries stay finished, a dead letter can be redelivered', async () => {
    const path = join(tempDir(), 'gateway.db');
    previousLayout(path);
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
});
