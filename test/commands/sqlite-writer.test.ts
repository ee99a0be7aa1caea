import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { entryValues, recordValues } from '../../src/commands/sqlite-command-sql.ts';
import { SqliteCommandStore } from '../../src/commands/sqlite-store.ts';
import { SqliteWriter } from '../../src/commands/sqlite-writer.ts';
import { tempDir } from '../support/gateway.ts';
import { outboxEntry, record } from './store-contract.ts';

const NOW = Date.parse('2030-01-01T00:00:00Z');
const opened: Array<{ close(): Promise<void> }> = [];

afterEach(async () => {
  for (const thing of opened.splice(0)) await thing.close();
});

/** A store and a second writer thread on one fresh file (the writer runs crafted writes). */
async function storeAndWriter(): Promise<{ store: SqliteCommandStore; writer: SqliteWriter }> {
  const path = join(tempDir(), 'gateway.db');
  const store = new SqliteCommandStore(path);
  await store.open();
  const writer = new SqliteWriter('test writer', { path, busyTimeoutMs: 5_000 });
  await writer.open();
  opened.push(writer, store);
  return { store, writer };
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
    expect(await store.find('a', NOW)).toBeUndefined();
    expect(await store.find('b', NOW)).toEqual(record('b'));
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
    expect(await store.find('c', NOW)).toEqual(record('c'));
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
});
