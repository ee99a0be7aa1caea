import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DatabaseSync } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { entryValues, recordValues } from '../../src/commands/sqlite-command-sql.ts';
import { SqliteCommandStore } from '../../src/commands/sqlite-store.ts';
import { MAX_MERGED_WRITES, SqliteWriter } from '../../src/commands/sqlite-writer.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir } from '../support/gateway.ts';
import { outboxEntry, record } from './store-contract.ts';
import { FAST_DISPATCH, ordersBackend, placeOrder, post, scriptedBackend, sendJson } from './support.ts';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const opened: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const thing of opened.splice(0)) await thing.close();
  await closeAll();
});

/**
 * A store and a second writer thread (waiting `busyTimeoutMs` for a lock) on one fresh file (the
 * writer runs crafted writes; it took the file over from the store's own writer thread, so the
 * store only reads).
 */
async function storeAndWriter(busyTimeoutMs = 5_000): Promise<{ path: string; store: SqliteCommandStore; writer: SqliteWriter }> {
  const path = join(tempDir(), 'gateway.db');
  const store = new SqliteCommandStore(path);
  await store.open();
  const writer = new SqliteWriter('test writer', { path, busyTimeoutMs });
  await writer.open();
  opened.push(writer, store);
  return { path, store, writer };
}

/**
 * Takes the file's write lock on a connection of its own, then asks `writer` for one enqueue per id,
 * each in a turn of its own: the thread's first transaction waits for the lock (within its busy
 * timeout) while the later batches reach it. Returns the lock's connection and the enqueues' seqs.
 */
async function enqueuesWhileLocked(path: string, writer: SqliteWriter, ids: string[]): Promise<{ lock: DatabaseSync; seqs: Array<Promise<number>> }> {
  const lock = new DatabaseSync(path);
  lock.exec('BEGIN IMMEDIATE');
  const seqs: Array<Promise<number>> = [];
  for (const id of ids) {
    seqs.push(writer.run('enqueue', entryValues(outboxEntry(id))));
    // A batch asked for while one is in flight leaves at the end of its turn.
    await new Promise((resolve) => setImmediate(resolve));
  }
  await new Promise((resolve) => setImmediate(resolve));
  return { lock, seqs };
}

describe('SqliteWriter (the command store writer thread)', () => {
  it('undoes a write that fails alone: an accept whose outbox entry is refused leaves no idempotency record, and the write beside it in the batch commits', async () => {
    const { store, writer } = await storeAndWriter();
    const broken = entryValues(outboxEntry('a'));
    broken[1] = null as unknown as string; // backend is NOT NULL
    // Asked for in one turn: one batch, one transaction.
    const [refused, accepted] = await Promise.allSettled([
      writer.run('accept', recordValues(record('a')), broken, NOW),
      writer.run('accept', recordValues(record('b')), entryValues(outboxEntry('b')), NOW),
    ]);
    expect(refused.status).toBe('rejected');
    expect(String((refused as PromiseRejectedResult).reason.message)).toMatch(/NOT NULL/);
    expect(accepted).toEqual({ status: 'fulfilled', value: undefined });
    expect(await writer.run('find', 'a', NOW)).toBeUndefined();
    expect(await writer.run('find', 'b', NOW)).toEqual(record('b'));
    expect((await store.due('orders', NOW, 10)).map((entry) => entry.id)).toEqual(['b']);
  });

  it('undoes a failing write of one statement alone (run without a savepoint): the writes before and after it in the batch commit', async () => {
    const { store, writer } = await storeAndWriter();
    const broken = entryValues(outboxEntry('b'));
    broken[1] = null as unknown as string; // backend is NOT NULL
    // Asked for in one turn: one batch, one transaction.
    const [first, refused, last] = await Promise.allSettled([
      writer.run('enqueue', entryValues(outboxEntry('a'))),
      writer.run('enqueue', broken),
      writer.run('accept', recordValues(record('c')), entryValues(outboxEntry('c')), NOW),
    ]);
    expect(first.status).toBe('fulfilled');
    expect(String((refused as PromiseRejectedResult).reason?.message)).toMatch(/NOT NULL/);
    expect(last).toEqual({ status: 'fulfilled', value: undefined });
    expect((await store.due('orders', NOW, 10)).map((entry) => entry.id)).toEqual(['a', 'c']);
    expect(await writer.run('find', 'c', NOW)).toEqual(record('c'));
  });

  it('sends a batch while another is in flight, and the thread commits it without waiting for the event loop to take the first answer', async () => {
    const { path, writer } = await storeAndWriter();
    const { lock, seqs: [first, second] } = await enqueuesWhileLocked(path, writer, ['a', 'b']);
    lock.exec('COMMIT');
    lock.close();
    // The event loop is held from here: b can only be committed if it already reached the thread.
    const reader = new DatabaseSync(path, { readOnly: true });
    const committed = (): number => (reader.prepare('SELECT COUNT(*) AS n FROM outbox').get() as { n: number }).n;
    const deadline = Date.now() + 10_000;
    while (committed() < 2 && Date.now() < deadline);
    expect(committed()).toBe(2);
    reader.close();
    expect(await first).toBeGreaterThan(0);
    expect(await second).toBeGreaterThan(await first);
  });

  it('answers the batches merged into one transaction in one message, each batch with its own answers', async () => {
    const { path, writer } = await storeAndWriter();
    const emit = vi.spyOn(Worker.prototype, 'emit');
    try {
      const { lock, seqs: writes } = await enqueuesWhileLocked(path, writer, ['a', 'b', 'c']);
      await new Promise((resolve) => setTimeout(resolve, 50));
      lock.exec('COMMIT');
      lock.close();
      const seqs = await Promise.all(writes);
      expect(seqs[1]).toBe(seqs[0] + 1);
      expect(seqs[2]).toBe(seqs[0] + 2);
      // Three batches, at most two transactions (the first alone, or all three when the thread took
      // them together on a busy machine), and one message per transaction, not per batch.
      expect(emit.mock.calls.filter(([event]) => event === 'message').length).toBeLessThan(3);
    } finally {
      emit.mockRestore();
    }
  });

  it(`merges at most MAX_MERGED_WRITES (${MAX_MERGED_WRITES}) writes into one transaction: the batches beyond go into the next, each answered with its own`, async () => {
    const { path, writer } = await storeAndWriter();
    const emit = vi.spyOn(Worker.prototype, 'emit');
    try {
      // One enqueue waits for the lock; meanwhile two batches of 60 % of the limit each reach the thread.
      const { lock, seqs: [first] } = await enqueuesWhileLocked(path, writer, ['first']);
      const batchSize = Math.ceil(MAX_MERGED_WRITES * 0.6);
      const batches: Array<Array<Promise<number>>> = [];
      for (let b = 0; b < 2; b++) {
        batches.push(Array.from({ length: batchSize }, (_, i) => writer.run('enqueue', entryValues(outboxEntry(`b${b}-${i}`)))));
        await new Promise((resolve) => setImmediate(resolve));
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
      lock.exec('COMMIT');
      lock.close();
      const seqs = [await first, ...(await Promise.all(batches.flat()))];
      // Every write answered with its own seq, in the order asked.
      for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(seqs[i - 1] + 1);
      // One message per transaction: none holds more than the limit, so the two batches went apart.
      const transactions = emit.mock.calls
        .filter(([event, message]) => event === 'message' && 'answers' in (message as object))
        .map(([, message]) => (message as { answers: unknown[][] }).answers.reduce((sum, answers) => sum + answers.length, 0));
      expect(transactions.reduce((sum, writes) => sum + writes, 0)).toBe(1 + 2 * batchSize);
      expect(Math.max(...transactions)).toBeLessThanOrEqual(MAX_MERGED_WRITES);
    } finally {
      emit.mockRestore();
    }
  });

  it('refuses with STORE_UNAVAILABLE every batch merged into a transaction that failed, then writes again', async () => {
    const { path, store, writer } = await storeAndWriter(300);
    const { lock, seqs } = await enqueuesWhileLocked(path, writer, ['a', 'b', 'c']);
    // The lock outlives both transactions' busy timeout: the first alone, then the second and third merged.
    const outcomes = await Promise.allSettled(seqs);
    lock.exec('COMMIT');
    lock.close();
    for (const outcome of outcomes) expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(await writer.run('enqueue', entryValues(outboxEntry('d')))).toBeGreaterThan(0);
    expect((await store.due('orders', Number.MAX_SAFE_INTEGER, 10)).map((entry) => entry.id)).toEqual(['d']);
  });

  it('lets the writes already asked for commit on close, then refuses new ones', async () => {
    const { store, writer } = await storeAndWriter();
    const pending = writer.run('enqueue', entryValues(outboxEntry('a')));
    await writer.close();
    expect(await pending).toBeGreaterThan(0);
    expect(await store.depth()).toBe(1);
    await expect(writer.run('complete', 1)).rejects.toThrow('test writer is not open');
    await writer.close();
  });

  it('refuses writes before open and after the store closed', async () => {
    const store = new SqliteCommandStore(join(tempDir(), 'gateway.db'));
    await expect(store.complete(1)).rejects.toThrow('SqliteCommandStore is not open');
    await store.open();
    await store.close();
    await expect(store.accept(record('a'), outboxEntry('a'), NOW)).rejects.toThrow('SqliteCommandStore is not open');
  });

  it('refuses a write with STORE_UNAVAILABLE when SQLite cannot write (still locked after the busy timeout), and writes again once it can', async () => {
    const { path, writer } = await storeAndWriter(50);
    const other = new DatabaseSync(path);
    other.exec('BEGIN IMMEDIATE');
    await expect(writer.run('enqueue', entryValues(outboxEntry('a')))).rejects.toMatchObject({
      code: 'STORE_UNAVAILABLE', headers: { 'Retry-After': '1' }, message: expect.stringMatching(/database is locked/),
    });
    other.exec('COMMIT');
    other.close();
    expect(await writer.run('enqueue', entryValues(outboxEntry('a')))).toBeGreaterThan(0);
  });

  it('keeps a process that holds nothing else alive while it opens, writes and closes (a script awaiting the store at top level)', () => {
    const dir = tempDir();
    const script = join(dir, 'script.ts');
    writeFileSync(script, `
      import { SqliteCommandStore } from ${JSON.stringify(fileURLToPath(new URL('../../src/commands/sqlite-store.ts', import.meta.url)))};
      const store = new SqliteCommandStore(${JSON.stringify(join(dir, 'gateway.db'))});
      await store.open();
      await store.complete(1);
      await store.close();
      console.log('done');
    `);
    const run = spawnSync(process.execPath, ['--disable-warning=ExperimentalWarning', script], { encoding: 'utf8', timeout: 30_000 });
    expect({ status: run.status, stdout: run.stdout.trim() }).toEqual({ status: 0, stdout: 'done' });
  });

  it('tells its health hook once when the thread dies and once when the next write has started a new one', async () => {
    const heard: string[] = [];
    const store = new SqliteCommandStore(join(tempDir(), 'gateway.db'), {
      down: (err) => heard.push(`down: ${err.message}`), up: () => heard.push('up'), takenOver: (err) => heard.push(`taken over: ${err.message}`),
    });
    await store.open();
    opened.push(store);
    await store.writer.terminate();
    await expect(store.complete(1)).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE' });
    await eventually(() => store.writer.up);
    await store.complete(1);
    expect(heard).toEqual([expect.stringMatching(/^down: .*writer thread stopped/), 'up']);
  });

  it('refuses with 503 STORE_UNAVAILABLE and reports storage not ready while the thread is dead, then restarts it on the next write', async () => {
    const orders = await scriptedBackend((_req, res) => sendJson(res, 201, { ok: true }));
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${ordersBackend(orders.url)}`, `storage: { driver: sqlite, path: ${join(tempDir(), 'gateway.db')} }`));
    const writer = (gw.commandStore as SqliteCommandStore).writer;
    expect((await post(`${gw.url}commands`, placeOrder())).status).toBe(201);
    await eventually(() => orders.received.length === 1);
    // The completion is written after the backend's answer: the thread dies with nothing in flight.
    await eventually(async () => (await gw.commandStore.depth()) === 0);

    await writer.terminate();
    const readyz = await getJson(`${gw.url}readyz`);
    expect(readyz.status).toBe(503);
    expect(readyz.body.error.details.pending).toEqual(['storage']);
    const refused = await post(`${gw.url}commands`, placeOrder());
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('STORE_UNAVAILABLE');
    expect(refused.headers.get('retry-after')).toBe('1');

    // That write started a new thread on the same file: ready again, commands accepted and delivered.
    await eventually(async () => (await fetch(`${gw.url}readyz`)).status === 200);
    expect((await post(`${gw.url}commands`, placeOrder())).status).toBe(201);
    await eventually(() => orders.received.length === 2);
    // Its completion commits after the backend's answer, not with it.
    await eventually(async () => (await gw.commandStore.depth()) === 0);
    expect(orders.received).toHaveLength(2);
  });

  it('refuses commands with 503 and reports storage not ready once another process opened its store file, while that process writes it', async () => {
    const orders = await scriptedBackend((_req, res) => sendJson(res, 201, { ok: true }));
    const path = join(tempDir(), 'gateway.db');
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${ordersBackend(orders.url)}`, `storage: { driver: sqlite, path: ${path} }`));
    const first = placeOrder();
    expect((await post(`${gw.url}commands`, first)).status).toBe(201);
    await eventually(async () => (await gw.commandStore.depth()) === 0);

    const other = new SqliteCommandStore(path);
    await other.open();
    opened.push(other);
    const refused = await post(`${gw.url}commands`, placeOrder());
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe('STORE_UNAVAILABLE');
    const readyz = await getJson(`${gw.url}readyz`);
    expect(readyz.status).toBe(503);
    expect(readyz.body.error.details.pending).toEqual(['storage']);
    // Still refused, still not ready: no new thread took the file back from a process that beats.
    expect((await post(`${gw.url}commands`, placeOrder())).status).toBe(503);
    expect((await fetch(`${gw.url}readyz`)).status).toBe(503);
    // The other process holds the first command's id and writes on.
    expect(await other.find(first.id as string, Date.now())).toMatchObject({ id: first.id });
    expect(await other.enqueue(outboxEntry('by-other'))).toMatchObject({ id: 'by-other' });
  });
});
