/**
 * The contracts of the command store ports (STYLE.md rule 4), one exported suite each, run by
 * every adapter's test file with a factory of fresh, unopened, empty stores:
 * `idempotencyContract` (IdempotencyStore), `outboxContract` (Outbox) and `commandStoreContract`
 * (the atomic accept and the correlation aliases of a CommandStore).
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  MAX_ALIASES_PER_COMMAND,
  type CommandStore,
  type IdempotencyRecord,
  type IdempotencyStore,
  type NewOutboxEntry,
  type Outbox,
} from '../../src/commands/CommandStore.ts';

const NOW = Date.parse('2030-01-01T00:00:00Z');

/** An idempotency record of `id` that expires at NOW + `ttlMs`. */
export function record(id: string, overrides: Partial<IdempotencyRecord> = {}, ttlMs = 60_000): IdempotencyRecord {
  return { id, principal: 'ops', fingerprint: `fp-${id}`, answer: { status: 201, body: { id } }, expiresMs: NOW + ttlMs, ...overrides };
}

/** An outbox entry of command `id` for `backend`, due at NOW + `dueInMs`. */
export function outboxEntry(id: string, backend = 'orders', dueInMs = 0): NewOutboxEntry {
  return {
    id,
    backend,
    command: { specversion: '1.0', id, source: 'urn:test', type: 'PlaceOrder', datacontenttype: 'application/json', dataschema: 'place-order/1.0', time: new Date(NOW).toISOString(), data: { sku: 'a', qty: 1 } },
    principal: 'ops',
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
    acceptedMs: NOW,
    attempts: 0,
    nextAttemptMs: NOW + dueInMs,
  };
}

/** Opens a fresh store before each test and closes it after; returns a getter. */
function lifecycle<T extends { open(): Promise<void>; close(): Promise<void> }>(make: () => T | Promise<T>): () => T {
  let store: T;
  beforeEach(async () => {
    store = await make();
    await store.open();
  });
  afterEach(async () => {
    await store.close();
  });
  return () => store;
}

/** The IdempotencyStore contract. */
export function idempotencyContract(name: string, make: () => IdempotencyStore | Promise<IdempotencyStore>): void {
  describe(`IdempotencyStore contract: ${name}`, () => {
    const store = lifecycle(make);

    it('stores a first claim and returns the live record to a second one', async () => {
      expect(await store().claim(record('a'), NOW)).toBeUndefined();
      const holder = await store().claim(record('a', { principal: 'other', fingerprint: 'x' }), NOW + 1);
      expect(holder).toEqual(record('a'));
      expect(await store().find('a', NOW)).toEqual(record('a'));
    });

    it('lets an expired record be claimed again', async () => {
      await store().claim(record('a', {}, 1000), NOW);
      expect(await store().find('a', NOW + 1000)).toBeUndefined();
      expect(await store().claim(record('a', { principal: 'late' }, 5000), NOW + 1000)).toBeUndefined();
      expect((await store().find('a', NOW + 1000))?.principal).toBe('late');
    });

    it('keeps exactly one of two concurrent claims of one id', async () => {
      const results = await Promise.all([store().claim(record('c', { principal: 'p1' }), NOW), store().claim(record('c', { principal: 'p2' }), NOW)]);
      expect(results.filter((r) => r === undefined)).toHaveLength(1);
      const kept = await store().find('c', NOW);
      expect(results.find((r) => r !== undefined)).toEqual(kept);
    });

    it('returns copies: changing a returned record changes nothing stored', async () => {
      await store().claim(record('a'), NOW);
      const found = (await store().find('a', NOW))!;
      (found.answer.body as { id: string }).id = 'changed';
      expect((await store().find('a', NOW))!.answer.body).toEqual({ id: 'a' });
    });

    it('purges expired records only', async () => {
      await store().claim(record('old', {}, 10), NOW);
      await store().claim(record('new', {}, 10_000), NOW);
      expect(await store().purgeExpired(NOW + 100)).toBe(1);
      expect(await store().find('new', NOW + 100)).toBeDefined();
      expect(await store().find('old', NOW)).toBeUndefined();
    });
  });
}

/** The Outbox contract. */
export function outboxContract(name: string, make: () => Outbox | Promise<Outbox>): void {
  describe(`Outbox contract: ${name}`, () => {
    const store = lifecycle(make);

    it('enqueues with increasing seqs and keeps every field', async () => {
      const a = await store().enqueue(outboxEntry('a'));
      const b = await store().enqueue(outboxEntry('b'));
      expect(b.seq).toBeGreaterThan(a.seq);
      const [due] = await store().due('orders', NOW, 1);
      expect(due).toEqual({ ...outboxEntry('a'), seq: a.seq });
      expect(await store().depth()).toBe(2);
    });

    it('counts the entries of one backend', async () => {
      await store().enqueue(outboxEntry('a', 'orders'));
      await store().enqueue(outboxEntry('b', 'payments'));
      const c = await store().enqueue(outboxEntry('c', 'orders'));
      expect([await store().depth('orders'), await store().depth('payments'), await store().depth('nobody')]).toEqual([2, 1, 0]);
      await store().complete(c.seq);
      expect(await store().depth('orders')).toBe(1);
    });

    it('lists due entries of one backend, earliest due first, up to the limit', async () => {
      await store().enqueue(outboxEntry('later', 'orders', 500));
      await store().enqueue(outboxEntry('x', 'payments'));
      await store().enqueue(outboxEntry('first', 'orders', -10));
      await store().enqueue(outboxEntry('second', 'orders'));
      expect((await store().due('orders', NOW, 10)).map((e) => e.id)).toEqual(['first', 'second']);
      expect((await store().due('orders', NOW + 500, 2)).map((e) => e.id)).toEqual(['first', 'second']);
      expect((await store().due('orders', NOW + 500, 10)).map((e) => e.id)).toEqual(['first', 'second', 'later']);
      expect((await store().due('payments', NOW, 10)).map((e) => e.id)).toEqual(['x']);
      expect(await store().due('nobody', NOW, 10)).toEqual([]);
    });

    it('lists due entries past a full page in order: same due time by seq, an earlier one enqueued last first', async () => {
      for (const id of ['a', 'b', 'c', 'd', 'e']) await store().enqueue(outboxEntry(id, 'orders'));
      await store().enqueue(outboxEntry('early', 'orders', -10));
      expect((await store().due('orders', NOW, 3)).map((e) => e.id)).toEqual(['early', 'a', 'b']);
      expect((await store().claimDue('orders', NOW, 2, 1000)).map((e) => e.id)).toEqual(['early', 'a']);
      expect((await store().claimDue('orders', NOW, 10, 1000)).map((e) => e.id)).toEqual(['b', 'c', 'd', 'e']);
    });

    it('reschedules a failed attempt and reports the next due time', async () => {
      const { seq } = await store().enqueue(outboxEntry('a'));
      expect(await store().nextDueMs()).toBe(NOW);
      await store().reschedule(seq, 1, NOW + 5000, 'BACKEND_UNAVAILABLE: down');
      expect(await store().due('orders', NOW, 10)).toEqual([]);
      const [entry] = await store().due('orders', NOW + 5000, 10);
      expect(entry).toMatchObject({ attempts: 1, nextAttemptMs: NOW + 5000, lastError: 'BACKEND_UNAVAILABLE: down' });
      expect(await store().nextDueMs()).toBe(NOW + 5000);
    });

    it('claims due entries with a lease: hidden from other claimers until the lease ends, returned as they were', async () => {
      await store().enqueue(outboxEntry('a'));
      await store().enqueue(outboxEntry('b'));
      await store().enqueue(outboxEntry('c', 'orders', 100));
      const claimed = await store().claimDue('orders', NOW, 10, 1000);
      expect(claimed.map((e) => ({ id: e.id, nextAttemptMs: e.nextAttemptMs }))).toEqual([{ id: 'a', nextAttemptMs: NOW }, { id: 'b', nextAttemptMs: NOW }]);
      expect(await store().claimDue('orders', NOW, 10, 1000)).toEqual([]);
      expect(await store().due('orders', NOW, 10)).toEqual([]);
      expect((await store().claimDue('orders', NOW + 100, 10, 1000)).map((e) => e.id)).toEqual(['c']);
      // The claimer died: its entries come back when the lease runs out, and nextDueMs says when.
      expect(await store().nextDueMs()).toBe(NOW + 1000);
      expect((await store().claimDue('orders', NOW + 1000, 10, 1000)).map((e) => e.id)).toEqual(['a', 'b']);
    });

    it('ends a claim on reschedule (due at the new time) and on completion', async () => {
      const a = await store().enqueue(outboxEntry('a'));
      const b = await store().enqueue(outboxEntry('b'));
      await store().claimDue('orders', NOW, 10, 60_000);
      await store().reschedule(a.seq, 1, NOW + 50, 'BACKEND_UNAVAILABLE: down');
      await store().complete(b.seq);
      const [again] = await store().claimDue('orders', NOW + 50, 10, 60_000);
      expect(again).toMatchObject({ id: 'a', attempts: 1, nextAttemptMs: NOW + 50, lastError: 'BACKEND_UNAVAILABLE: down' });
      expect(await store().depth()).toBe(1);
    });

    it('marks a claim reclaimed when the previous claim of its entry ran out, not when it ended', async () => {
      const a = await store().enqueue(outboxEntry('a'));
      const b = await store().enqueue(outboxEntry('b'));
      const c = await store().enqueue(outboxEntry('c'));
      const reclaims = async (nowMs: number) => Object.fromEntries((await store().claimDue('orders', nowMs, 10, 1000)).map((e) => [e.id, e.reclaimed]));
      expect(await reclaims(NOW)).toEqual({ a: false, b: false, c: false });
      // a's claimer died (nothing ended its claim); b's retried; c's claimer completed it.
      await store().reschedule(b.seq, 1, NOW + 1000, 'BACKEND_UNAVAILABLE: down');
      await store().complete(c.seq);
      expect(await reclaims(NOW + 1000)).toEqual({ a: true, b: false });
      // A reclaim that ended normally leaves the next claim a plain one.
      await store().reschedule(a.seq, 1, NOW + 2000, 'BACKEND_UNAVAILABLE: down');
      expect(await reclaims(NOW + 2000)).toEqual({ a: false, b: true });
    });

    it('never gives one entry to two concurrent claimers', async () => {
      for (let i = 0; i < 20; i++) await store().enqueue(outboxEntry(`e${i}`));
      const [first, second] = await Promise.all([store().claimDue('orders', NOW, 15, 1000), store().claimDue('orders', NOW, 15, 1000)]);
      const ids = [...first, ...second].map((e) => e.id);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(20);
    });

    it('completes entries (twice is a no-op) and lists the backends with entries', async () => {
      const a = await store().enqueue(outboxEntry('a', 'orders'));
      await store().enqueue(outboxEntry('b', 'payments'));
      expect((await store().backends()).sort()).toEqual(['orders', 'payments']);
      await store().complete(a.seq);
      await store().complete(a.seq);
      expect(await store().backends()).toEqual(['payments']);
      expect(await store().depth()).toBe(1);
    });

    it('is empty at first', async () => {
      expect(await store().depth()).toBe(0);
      expect(await store().nextDueMs()).toBeUndefined();
      expect(await store().backends()).toEqual([]);
    });
  });
}

/** The CommandStore contract: accept is atomic (record and entry together, or neither), and aliases. */
export function commandStoreContract(name: string, make: () => CommandStore | Promise<CommandStore>): void {
  describe(`CommandStore contract: ${name}`, () => {
    const store = lifecycle(make);

    it('writes the record and the outbox entry together', async () => {
      expect(await store().accept(record('a'), outboxEntry('a'), NOW)).toBeUndefined();
      expect(await store().find('a', NOW)).toEqual(record('a'));
      expect((await store().due('orders', NOW, 10)).map((e) => e.id)).toEqual(['a']);
    });

    it('accepts a batch in order in one commit, idempotency exact inside the batch', async () => {
      await store().accept(record('held'), outboxEntry('held'), NOW);
      const answers = await store().acceptBatch(
        [
          { record: record('a'), entry: outboxEntry('a') },
          { record: record('held', { principal: 'other' }), entry: outboxEntry('held') },
          { record: record('b'), entry: outboxEntry('b') },
          { record: record('a', { fingerprint: 'another' }), entry: outboxEntry('a') },
        ],
        NOW,
      );
      expect(answers.map((answer) => ('holder' in answer ? answer.holder : 'new'))).toEqual(['new', record('held'), 'new', record('a')]);
      const due = await store().due('orders', NOW, 10);
      expect(due.map((e) => e.id)).toEqual(['held', 'a', 'b']);
      // Each new entry's answer is its seq.
      expect([answers[0], answers[2]]).toEqual(due.slice(1).map((e) => ({ seq: e.seq })));
      expect(await store().acceptBatch([], NOW)).toEqual([]);
    });

    it('claims the new entries of items with a lease in the same commit: hidden until completed, rescheduled or the lease ends, then reclaimed', async () => {
      await store().accept(record('held'), outboxEntry('held'), NOW);
      const answers = await store().acceptBatch(
        [
          { record: record('a'), entry: outboxEntry('a'), leaseMs: 1000 },
          { record: record('b'), entry: outboxEntry('b') },
          { record: record('held', { principal: 'other' }), entry: outboxEntry('held'), leaseMs: 1000 },
          { record: record('c'), entry: outboxEntry('c'), leaseMs: 1000 },
          { record: record('d'), entry: outboxEntry('d'), leaseMs: 1000 },
        ],
        NOW,
      );
      expect('holder' in answers[2]).toBe(true);
      const [a, , , c, d] = answers.map((answer) => ('seq' in answer ? answer.seq : -1));
      // Only the unclaimed entries are due; the claimed ones count in the outbox.
      expect((await store().due('orders', NOW, 10)).map((e) => e.id)).toEqual(['held', 'b']);
      expect((await store().claimDue('orders', NOW + 999, 10, 1000)).map((e) => e.id)).toEqual(['held', 'b']);
      expect(await store().depth('orders')).toBe(5);
      // The claimer completes a and reschedules c; d's claimer dies: d comes back, reclaimed, when its lease runs out.
      await store().complete(a);
      await store().reschedule(c, 1, NOW + 500, 'BACKEND_UNAVAILABLE: down');
      expect(await store().claimDue('orders', NOW + 500, 10, 60_000)).toEqual([{ ...outboxEntry('c'), seq: c, attempts: 1, nextAttemptMs: NOW + 500, lastError: 'BACKEND_UNAVAILABLE: down', reclaimed: false }]);
      const [back] = await store().claimDue('orders', NOW + 1000, 10, 60_000);
      expect(back).toEqual({ ...outboxEntry('d'), seq: d, nextAttemptMs: NOW + 1000, reclaimed: true });
    });

    it('writes nothing when the id is held, and returns the holder', async () => {
      await store().accept(record('a'), outboxEntry('a'), NOW);
      const holder = await store().accept(record('a', { fingerprint: 'other' }), outboxEntry('a'), NOW + 1);
      expect(holder).toEqual(record('a'));
      expect(await store().depth()).toBe(1);
    });

    it('of concurrent accepts of one id, enqueues exactly one', async () => {
      const results = await Promise.all(Array.from({ length: 5 }, () => store().accept(record('c'), outboxEntry('c'), NOW)));
      expect(results.filter((r) => r === undefined)).toHaveLength(1);
      expect(await store().depth()).toBe(1);
    });

    it('accepts an id again once its record expired', async () => {
      await store().accept(record('a', {}, 10), outboxEntry('a'), NOW);
      expect(await store().accept(record('a', {}, 10), outboxEntry('a'), NOW + 10)).toBeUndefined();
      expect(await store().depth()).toBe(2);
    });

    it('remembers correlation aliases, each once, up to the limit', async () => {
      expect(await store().aliasesOf('a')).toEqual([]);
      await store().rememberAlias('a', 'backend-1');
      await store().rememberAlias('a', 'backend-1');
      expect(await store().aliasesOf('a')).toEqual(['backend-1']);
      for (let i = 0; i < MAX_ALIASES_PER_COMMAND + 3; i++) await store().rememberAlias('b', `x${i}`);
      expect(await store().aliasesOf('b')).toHaveLength(MAX_ALIASES_PER_COMMAND);
    });
  });
}
