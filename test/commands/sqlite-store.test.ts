import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { SqliteCommandStore } from '../../src/commands/sqlite-store.ts';
import { SqliteEventLog } from '../../src/log/sqlite.ts';
import { tempDir } from '../support/gateway.ts';
import { cloudEvent } from '../log/fixtures/cloud-event.ts';
import { idHash } from '../../src/commands/sqlite-command-sql.ts';
import { commandStoreContract, idempotencyContract, outboxContract, outboxEntry, record } from './store-contract.ts';

const make = () => new SqliteCommandStore(join(tempDir(), 'gateway.db'));
idempotencyContract('sqlite', make);
outboxContract('sqlite', make);
commandStoreContract('sqlite', make);

/** Writes idempotency records as builds before `command_records` kept them: in `command_ids`, keyed by id (each `[id, fingerprint, expiresMs]`). */
function writeOldRecords(path: string, records: Array<[string, string, number]>): void {
  const old = new DatabaseSync(path);
  old.exec(`CREATE TABLE command_ids (id TEXT PRIMARY KEY, principal TEXT NOT NULL, fingerprint TEXT NOT NULL, answer TEXT NOT NULL, expires_ms INTEGER NOT NULL) WITHOUT ROWID;
    CREATE INDEX command_ids_expires ON command_ids (expires_ms);`);
  const insert = old.prepare('INSERT INTO command_ids VALUES (?, ?, ?, ?, ?)');
  for (const [id, fingerprint, expiresMs] of records) insert.run(id, 'ops', fingerprint, JSON.stringify({ status: 201, body: { id } }), expiresMs);
  old.close();
}

/** An open store on a fresh file that accepted command `id` now (its record live for a minute unless `ttlMs` says otherwise). */
async function storeHolding(id: string, fingerprint = `fp-${id}`, ttlMs = 60_000): Promise<{ path: string; now: number; store: SqliteCommandStore }> {
  const path = join(tempDir(), 'gateway.db');
  const now = Date.now();
  const store = new SqliteCommandStore(path);
  await store.open();
  await store.accept(record(id, { fingerprint, expiresMs: now + ttlMs }), outboxEntry(id), now);
  return { path, now, store };
}

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

  it('opens idempotency records kept in the table keyed by id (before command_records): each id is still held, and the old table is gone', async () => {
    const path = join(tempDir(), 'gateway.db');
    const now = Date.now();
    writeOldRecords(path, [['live', 'fp-live', now + 60_000], ['gone', 'fp-gone', now - 1]]);

    const store = new SqliteCommandStore(path);
    await store.open();
    expect(await store.find('live', now)).toEqual({ id: 'live', principal: 'ops', fingerprint: 'fp-live', answer: { status: 201, body: { id: 'live' } }, expiresMs: now + 60_000 });
    expect(await store.accept(record('live', { fingerprint: 'other', expiresMs: now + 60_000 }), outboxEntry('live'), now)).toMatchObject({ fingerprint: 'fp-live' });
    expect(await store.find('gone', now)).toBeUndefined();
    expect(await store.accept(record('gone', { expiresMs: now + 60_000 }), outboxEntry('gone'), now)).toBeUndefined();
    expect(await store.depth()).toBe(1);
    await store.close();

    const db = new DatabaseSync(path);
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'command_ids%'").all()).toEqual([]);
    expect(db.prepare('SELECT id FROM command_records ORDER BY id').all().map((row) => row.id)).toEqual(['gone', 'live']);
    // The indexes dropped for the copy are built again.
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'command_records' ORDER BY name").all().map((row) => row.name))
      .toEqual(['command_records_expires', 'command_records_id']);
    db.close();
  });

  it('opens a file holding records in both tables (used by both versions in turn): an id keeps the record command_records held, the others move', async () => {
    const { path, now, store } = await storeHolding('both', 'fp-new');
    await store.close();
    writeOldRecords(path, [['both', 'fp-old', now + 60_000], ['only-old', 'fp-only-old', now + 60_000]]);

    const reopened = new SqliteCommandStore(path);
    await reopened.open();
    expect(await reopened.find('both', now)).toMatchObject({ fingerprint: 'fp-new' });
    expect(await reopened.find('only-old', now)).toMatchObject({ fingerprint: 'fp-only-old' });
    await reopened.close();
    const db = new DatabaseSync(path);
    expect(db.prepare('SELECT id FROM command_records ORDER BY id').all().map((row) => row.id)).toEqual(['both', 'only-old']);
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'command_records%' ORDER BY name").all().map((row) => row.name))
      .toEqual(['command_records', 'command_records_expires', 'command_records_id']);
    db.close();
  });

  it('tells apart two ids whose index keys are the same: a record is found by its own id only', async () => {
    const { path, now, store } = await storeHolding('first');
    // A second id sharing the first's key: made so here (52 bits of SHA-256 do not collide on their own).
    const db = new DatabaseSync(path, { timeout: 5000 });
    db.prepare('UPDATE command_records SET id_hash = ? WHERE id = ?').run(idHash('second'), 'first');
    db.close();

    expect(await store.find('second', now)).toBeUndefined();
    expect(await store.accept(record('second', { expiresMs: now + 60_000 }), outboxEntry('second'), now)).toBeUndefined();
    expect(await store.find('second', now)).toMatchObject({ id: 'second', fingerprint: 'fp-second' });
    expect(await store.find('first', now)).toBeUndefined(); // its key no longer leads to it: only the id's own key does
    expect(await store.depth()).toBe(2);
    await store.close();
  });

  it('replaces an expired record of an id with one row: the id is held by the new record alone', async () => {
    const { path, now, store } = await storeHolding('again', 'fp-again', 10);
    expect(await store.accept(record('again', { fingerprint: 'fp-new', expiresMs: now + 60_000 }), outboxEntry('again'), now + 10)).toBeUndefined();
    expect(await store.find('again', now + 10)).toMatchObject({ fingerprint: 'fp-new' });
    await store.close();
    const db = new DatabaseSync(path);
    expect(db.prepare('SELECT fingerprint FROM command_records WHERE id = ?').all('again').map((row) => row.fingerprint)).toEqual(['fp-new']);
    db.close();
  });
});
