import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { SqliteCommandStore } from '../../src/commands/sqlite-store.ts';
import { SqliteEventLog } from '../../src/log/sqlite.ts';
import { tempDir } from '../support/gateway.ts';
import { cloudEvent } from '../log/fixtures/cloud-event.ts';
import { commandStoreContract, idempotencyContract, outboxContract, outboxEntry, record } from './store-contract.ts';

const make = () => new SqliteCommandStore(join(tempDir(), 'gateway.db'));
idempotencyContract('sqlite', make);
outboxContract('sqlite', make);
commandStoreContract('sqlite', make);

describe('SqliteCommandStore on the event log file', () => {
  it('shares the file with the event log (two connections) and keeps everything across a reopen', async () => {
    const path = join(tempDir(), 'gateway.db');
    const log = new SqliteEventLog(path);
    await log.open();
    const store = new SqliteCommandStore(path);
    await store.open();
    const now = Date.now();
    await store.accept(record('a', { expiresMs: now + 60_000 }), outboxEntry('a'), now);
    await log.append([{ event: cloudEvent('e1') }]);
    await store.rememberAlias('a', 'b-1');
    await store.close();
    await store.close();

    const reopened = new SqliteCommandStore(path);
    await reopened.open();
    expect(await reopened.find('a', now)).toBeDefined();
    expect(await reopened.depth()).toBe(1);
    expect(await reopened.aliasesOf('a')).toEqual(['b-1']);
    expect(await log.count()).toBe(1);
    await reopened.close();
    await log.close();
  });

  it('opens an outbox written before claims were marked: its entries are kept and their claims marked from then on', async () => {
    const path = join(tempDir(), 'gateway.db');
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL, backend TEXT NOT NULL, command TEXT NOT NULL,
      principal TEXT NOT NULL, traceparent TEXT, accepted_ms INTEGER NOT NULL, attempts INTEGER NOT NULL, next_attempt_ms INTEGER NOT NULL, last_error TEXT)`);
    const entry = outboxEntry('old');
    old.prepare('INSERT INTO outbox (id, backend, command, principal, accepted_ms, attempts, next_attempt_ms) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(entry.id, entry.backend, JSON.stringify(entry.command), entry.principal, entry.acceptedMs, 0, entry.nextAttemptMs);
    old.close();

    const store = new SqliteCommandStore(path);
    await store.open();
    const [first] = await store.claimDue('orders', entry.nextAttemptMs, 10, 1000);
    expect(first).toMatchObject({ id: 'old', reclaimed: false });
    const [again] = await store.claimDue('orders', entry.nextAttemptMs + 1000, 10, 1000);
    expect(again).toMatchObject({ id: 'old', reclaimed: true });
    await store.close();
  });
});
