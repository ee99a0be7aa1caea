import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { describe, expect, it, vi } from 'vitest';
import { PURGE_CHUNK, SqliteCommandStore } from '../../src/commands/sqlite-store.ts';
import { SqliteEventLog } from '../../src/log/sqlite.ts';
import { eventually, tempDir } from '../support/gateway.ts';
import { cloudEvent } from '../log/fixtures/cloud-event.ts';
import { idHash } from '../../src/commands/sqlite-command-sql.ts';
import { commandStoreContract, idempotencyContract, outboxContract, outboxEntry, record } from './store-contract.ts';

const make = () => new SqliteCommandStore(join(tempDir(), 'gateway.db'));
idempotencyContract('sqlite', make);
outboxContract('sqlite', make);
commandStoreContract('sqlite', make);
// The same contracts with every record merged into the file's id index as soon as the writer thread
// may (lookups then find ids on disk, in memory and in the index being merged, in turn).
const merging = () => new SqliteCommandStore(join(tempDir(), 'gateway.db'), undefined, { mergeAt: 1 });
idempotencyContract('sqlite, merging at once', merging);
commandStoreContract('sqlite, merging at once', merging);

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
    // The index dropped for the copy is built again. The moved record is in the id index on disk
    // (the expired one's entry went with it; its new record is indexed in the writer's memory).
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'command_records' ORDER BY name").all().map((row) => row.name))
      .toEqual(['command_records_expires']);
    expect(db.prepare('SELECT r.id FROM command_record_ids i JOIN command_records r ON r.rowid = i.rec').all().map((row) => row.id)).toEqual(['live']);
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
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE 'command_record%' ORDER BY name").all().map((row) => row.name))
      .toEqual(['command_record_ids', 'command_records', 'command_records_expires', 'command_records_indexed', 'command_records_unindexed']);
    db.close();
  });

  it('tells apart two ids whose index keys are the same: a record is found by its own id only', async () => {
    const { path, now, store: first } = await storeHolding('first');
    await first.close();
    // A second id sharing the first's key: made so here (52 bits of SHA-256 do not collide on their own).
    const db = new DatabaseSync(path, { timeout: 5000 });
    db.prepare('UPDATE command_records SET id_hash = ? WHERE id = ?').run(idHash('second'), 'first');
    db.close();
    const store = new SqliteCommandStore(path);
    await store.open();

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

/** What the file's id index holds: its entries, how many lead to no record or repeat one, how far records are merged and how many records that is. */
function idIndexOf(path: string): { entries: number; dangling: number; duplicates: number; mergedThrough: number; merged: number } {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    const n = (sql: string): number => (db.prepare(sql).get() as { n: number }).n;
    return {
      entries: n('SELECT COUNT(*) AS n FROM command_record_ids'),
      dangling: n('SELECT COUNT(*) AS n FROM command_record_ids i LEFT JOIN command_records r ON r.rowid = i.rec WHERE r.rowid IS NULL'),
      duplicates: n('SELECT COUNT(*) - COUNT(DISTINCT rec) AS n FROM command_record_ids'),
      mergedThrough: n('SELECT merged_through AS n FROM command_store_writer'),
      merged: n('SELECT COUNT(*) AS n FROM command_records WHERE rowid <= (SELECT merged_through FROM command_store_writer)'),
    };
  } finally {
    db.close();
  }
}

/** Accepts `ids` (records live for a minute from `now`, unless `ttlMs`), ten to a batch; every one must be new. */
async function acceptAll(store: SqliteCommandStore, ids: string[], now: number, ttlMs = 60_000): Promise<void> {
  for (let i = 0; i < ids.length; i += 10) {
    const items = ids.slice(i, i + 10).map((id) => ({ record: record(id, { expiresMs: now + ttlMs }), entry: outboxEntry(id) }));
    for (const answer of await store.acceptBatch(items, now)) expect(answer).toHaveProperty('seq');
  }
}

/** Every id of `ids` is held: found, and an accept of it again gets its record back. */
async function expectHeld(store: SqliteCommandStore, ids: string[], now: number): Promise<void> {
  for (const id of ids) {
    expect(await store.find(id, now)).toMatchObject({ id, fingerprint: `fp-${id}` });
    const [again] = await store.acceptBatch([{ record: record(id, { fingerprint: 'other', expiresMs: now + 60_000 }), entry: outboxEntry(id) }], now);
    expect(again).toMatchObject({ holder: { id, fingerprint: `fp-${id}` } });
  }
}

/** An open store on a fresh file (`options` as `SqliteCommandStore` takes them), and the time it opened. */
async function freshStore(options: { mergeAt?: number; beatMs?: number } = {}): Promise<{ path: string; now: number; store: SqliteCommandStore }> {
  const path = join(tempDir(), 'gateway.db');
  const store = new SqliteCommandStore(path, undefined, options);
  await store.open();
  return { path, now: Date.now(), store };
}

const idsFrom = (prefix: string, count: number): string[] => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe('SqliteCommandStore id index (the newest records indexed in the writer thread, merged into the file)', () => {
  it('merges the records into the file once mergeAt are held, a key range at a time, and holds every id before and after, across a reopen', async () => {
    const { path, now, store } = await freshStore({ mergeAt: 50 });
    const ids = idsFrom('cmd', 425);
    await acceptAll(store, ids, now);
    // Merged while accepting: all but the newest (fewer than mergeAt, plus what came while a merge waited to start).
    await eventually(() => idIndexOf(path).entries >= 350);
    await expectHeld(store, ids, now);
    await store.close();
    const index = idIndexOf(path);
    expect(index).toMatchObject({ entries: index.merged, dangling: 0, duplicates: 0 });

    // A new writer thread indexes again what was not merged; the rest it finds in the file.
    const reopened = new SqliteCommandStore(path);
    await reopened.open();
    await expectHeld(reopened, ids, now);
    await reopened.close();
  });

  it('merges again, from the records, what a merge cut short had written (a crash): no id lost, none indexed twice', async () => {
    const { path, now, store } = await freshStore();
    const ids = idsFrom('cmd', 300);
    await acceptAll(store, ids, now);
    await store.close();
    expect(idIndexOf(path)).toMatchObject({ entries: 0, mergedThrough: 0 });
    // What a merge killed before its last key range leaves: some records indexed, merged_through not moved.
    const db = new DatabaseSync(path);
    db.exec('INSERT INTO command_record_ids SELECT id_hash, rowid FROM command_records WHERE id_hash < 2251799813685248');
    const partly = (db.prepare('SELECT COUNT(*) AS n FROM command_record_ids').get() as { n: number }).n;
    db.close();
    expect(partly).toBeGreaterThan(50);

    const reopened = new SqliteCommandStore(path, undefined, { mergeAt: 100 });
    await reopened.open();
    // Opened with 300 records above merged_through: the merge starts without a write asking for it.
    await eventually(() => idIndexOf(path).mergedThrough === 300);
    expect(idIndexOf(path)).toMatchObject({ entries: 300, duplicates: 0, dangling: 0 });
    await expectHeld(reopened, ids, now);
    await reopened.close();
  });

  it('leaves no entry in the file for a record purged or replaced, whether it was merged or still in memory', async () => {
    const { path, now, store } = await freshStore({ mergeAt: 20 });
    // Merged (some of them), then purged.
    await acceptAll(store, idsFrom('early', 30), now, 10);
    await eventually(() => idIndexOf(path).entries >= 20);
    expect(await store.purgeExpired(now + 10)).toBe(30);
    expect(idIndexOf(path).entries).toBe(0);
    // In memory when purged: the next merge skips them.
    await acceptAll(store, idsFrom('late', 10), now, 10);
    expect(await store.purgeExpired(now + 10)).toBe(10);
    // Accepted again once purged, then enough to merge twice.
    await acceptAll(store, ['early-0', 'early-29', 'late-0'], now + 10);
    await acceptAll(store, idsFrom('more', 40), now);
    await eventually(() => idIndexOf(path).mergedThrough > 70);
    await expectHeld(store, ['early-0', 'early-29', 'late-0', ...idsFrom('more', 40)], now + 10);
    await store.close();
    const index = idIndexOf(path);
    expect(index).toMatchObject({ dangling: 0, duplicates: 0 });
    expect(index.entries).toBe(index.merged);
  });

  it('opens a file of the version before (records found by an index of command_records): every id is held, that index is gone, each record is in the id index', async () => {
    const path = join(tempDir(), 'gateway.db');
    const now = Date.now();
    const old = new DatabaseSync(path);
    old.exec(`CREATE TABLE command_records (id TEXT NOT NULL, id_hash INTEGER NOT NULL, principal TEXT NOT NULL, fingerprint TEXT NOT NULL, answer TEXT NOT NULL, expires_ms INTEGER NOT NULL);
      CREATE INDEX command_records_id ON command_records (id_hash);
      CREATE INDEX command_records_expires ON command_records (expires_ms);`);
    const insert = old.prepare('INSERT INTO command_records (id, id_hash, principal, fingerprint, answer, expires_ms) VALUES (?, ?, ?, ?, ?, ?)');
    const ids = idsFrom('cmd', 100);
    for (const id of ids) insert.run(id, idHash(id), 'ops', `fp-${id}`, JSON.stringify({ status: 201, body: { id } }), now + 60_000);
    old.close();

    const store = new SqliteCommandStore(path);
    await store.open();
    await expectHeld(store, ids, now);
    await store.close();
    expect(idIndexOf(path)).toMatchObject({ entries: 100, mergedThrough: 100, dangling: 0, duplicates: 0 });
    const db = new DatabaseSync(path, { readOnly: true });
    expect(db.prepare("SELECT name FROM sqlite_schema WHERE name = 'command_records_id'").all()).toEqual([]);
    db.close();
  });

  it('opens a file the version before wrote to after this one (its index back, records added and deleted beside the id index): the id index is built again', async () => {
    const { path, now, store } = await freshStore({ mergeAt: 10 });
    const ids = idsFrom('cmd', 25);
    await acceptAll(store, ids, now);
    await eventually(() => idIndexOf(path).entries >= 20);
    await store.close();
    // The version before: builds its index on open, appends a record, purges one it merged here.
    const old = new DatabaseSync(path);
    old.exec("CREATE INDEX command_records_id ON command_records (id_hash); DELETE FROM command_records WHERE id = 'cmd-0'");
    old.prepare('INSERT INTO command_records (id, id_hash, principal, fingerprint, answer, expires_ms) VALUES (?, ?, ?, ?, ?, ?)')
      .run('by-old', idHash('by-old'), 'ops', 'fp-by-old', JSON.stringify({ status: 201, body: {} }), now + 60_000);
    old.close();

    const reopened = new SqliteCommandStore(path);
    await reopened.open();
    await expectHeld(reopened, [...ids.slice(1), 'by-old'], now);
    expect(await reopened.find('cmd-0', now)).toBeUndefined();
    await reopened.close();
    expect(idIndexOf(path)).toMatchObject({ entries: 25, merged: 25, dangling: 0, duplicates: 0 });
  });

  it('is taken over by a second process opening the file: the first refuses writes with 503 while the second beats, and takes the file back once it stops', async () => {
    const path = join(tempDir(), 'gateway.db');
    const now = Date.now();
    const heard: string[] = [];
    // Beats every 50 ms: a file is taken back after 10 beats (500 ms) without one.
    const first = new SqliteCommandStore(path, { down: (err) => heard.push(`down: ${err.message}`), up: () => heard.push('up'), takenOver: (err) => heard.push(`taken over: ${err.message}`) }, { beatMs: 50 });
    await first.open();
    await acceptAll(first, ['before'], now);
    const second = new SqliteCommandStore(path, undefined, { beatMs: 50 });
    await second.open();

    await expect(first.accept(record('after'), outboxEntry('after'), now)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', message: expect.stringMatching(/another process opened the store file/) });
    expect(first.writer.up).toBe(false);
    expect(heard).toEqual([expect.stringMatching(/^taken over: .*another process opened the store file/)]);
    // Three times the stale time with the second idle: its own beats keep the file; no new thread took it back.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await expect(first.accept(record('again'), outboxEntry('again'), now)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(first.writer.up).toBe(false);
    expect(heard).toHaveLength(1);
    await expectHeld(second, ['before'], now);
    await acceptAll(second, ['by-second'], now);

    // The second stops (a gateway that failed to start, say): the first takes the file back, with the second's ids.
    await second.close();
    await eventually(() => first.writer.up);
    expect(heard).toEqual([expect.stringMatching(/^taken over: /), 'up']);
    await expectHeld(first, ['before', 'by-second'], now);
    await acceptAll(first, ['after'], now);
    await first.close();
  });

  it('refuses every write with 503 after a takeover found with several transactions in flight: none turns into a 500', async () => {
    const path = join(tempDir(), 'gateway.db');
    const now = Date.now();
    const first = new SqliteCommandStore(path);
    await first.open();
    const second = new SqliteCommandStore(path);
    await second.open();
    // A lock holds the first's thread in its first transaction while a second batch reaches it: two failures answer.
    const lock = new DatabaseSync(path);
    lock.exec('BEGIN IMMEDIATE');
    const early = first.find('x', now);
    await new Promise((resolve) => setImmediate(resolve));
    const late = first.find('y', now);
    await new Promise((resolve) => setTimeout(resolve, 100));
    lock.exec('COMMIT');
    lock.close();
    const refusals = await Promise.allSettled([early, late]);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const after = await first.find('z', now).catch((err: unknown) => err);
    for (const refused of [...refusals.map((outcome) => (outcome as PromiseRejectedResult).reason), after]) {
      expect(refused).toMatchObject({ code: 'STORE_UNAVAILABLE', status: 503 });
    }
    await first.close();
    await second.close();
  });

  it('holds the ids a build before this one appends to the file while this one runs (a rolling restart), and gives them no second record', async () => {
    const path = join(tempDir(), 'gateway.db');
    const now = Date.now();
    // The build before is running: its layout, its index, one record.
    const old = new DatabaseSync(path, { timeout: 5000 });
    old.exec(`CREATE TABLE command_records (id TEXT NOT NULL, id_hash INTEGER NOT NULL, principal TEXT NOT NULL, fingerprint TEXT NOT NULL, answer TEXT NOT NULL, expires_ms INTEGER NOT NULL);
      CREATE INDEX command_records_id ON command_records (id_hash);
      CREATE INDEX command_records_expires ON command_records (expires_ms);`);
    const oldInsert = old.prepare('INSERT INTO command_records (id, id_hash, principal, fingerprint, answer, expires_ms) VALUES (?, ?, ?, ?, ?, ?)');
    const oldAccept = (id: string) => oldInsert.run(id, idHash(id), 'ops', `fp-${id}`, JSON.stringify({ status: 201, body: {} }), now + 60_000);
    oldAccept('before');

    const store = new SqliteCommandStore(path, undefined, { mergeAt: 5 });
    await store.open();
    // The old process appends (SQLite's own rowid, the next one this store would have taken) while this one runs.
    oldAccept('old-during');
    await acceptAll(store, ['new-1'], now);
    oldAccept('old-later');
    await acceptAll(store, idsFrom('new', 12).slice(2), now);
    await eventually(() => idIndexOf(path).mergedThrough >= 5);
    await expectHeld(store, ['before', 'old-during', 'old-later', 'new-1', ...idsFrom('new', 12).slice(2)], now);
    old.close();
    await store.close();

    const reopened = new SqliteCommandStore(path);
    await reopened.open();
    await expectHeld(reopened, ['before', 'old-during', 'old-later', 'new-1'], now);
    await reopened.close();
    const db = new DatabaseSync(path, { readOnly: true });
    expect(db.prepare('SELECT COUNT(*) - COUNT(DISTINCT id) AS n FROM command_records').get()).toEqual({ n: 0 });
    db.close();
    expect(idIndexOf(path)).toMatchObject({ dangling: 0, duplicates: 0 });
  });

  it('holds an id moved from command_ids into a table whose newest records were purged (moved below merged_through)', async () => {
    const { path, now, store } = await freshStore({ mergeAt: 10 });
    await acceptAll(store, idsFrom('early', 30), now, 10);
    await eventually(() => idIndexOf(path).mergedThrough >= 10);
    expect(await store.purgeExpired(now + 10)).toBe(30);
    await store.close();
    writeOldRecords(path, [['legacy', 'fp-legacy', now + 60_000]]);

    const reopened = new SqliteCommandStore(path);
    await reopened.open();
    await expectHeld(reopened, ['legacy'], now);
    await reopened.close();
  });

  it('opens a file whose writer row has no beat (as 943a35e made it): the column is added, the ids held', async () => {
    const { path, now, store } = await freshStore();
    await acceptAll(store, ['before'], now);
    await store.close();
    const db = new DatabaseSync(path);
    db.exec('ALTER TABLE command_store_writer DROP COLUMN beat');
    db.close();

    const reopened = new SqliteCommandStore(path);
    await reopened.open();
    await expectHeld(reopened, ['before'], now);
    await acceptAll(reopened, ['after'], now);
    await reopened.close();
  });

  it(`purges a chunk of PURGE_CHUNK (${PURGE_CHUNK}) records per transaction, so the writes asked for meanwhile commit between them`, async () => {
    const { now, store } = await freshStore();
    const expired = 2 * PURGE_CHUNK + 10;
    const items = idsFrom('old', expired).map((id) => ({ record: record(id, { expiresMs: now + 10 }), entry: outboxEntry(id) }));
    await store.acceptBatch(items, now);
    const emit = vi.spyOn(Worker.prototype, 'emit');
    try {
      expect(await store.purgeExpired(now + 10)).toBe(expired);
      // One answer per transaction: three chunks, three transactions.
      expect(emit.mock.calls.filter(([event, message]) => event === 'message' && 'answers' in (message as object))).toHaveLength(3);
    } finally {
      emit.mockRestore();
    }
    expect(await store.find('old-0', now + 10)).toBeUndefined();
    await store.close();
  });
});
