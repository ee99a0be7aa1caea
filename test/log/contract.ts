/**
 * The contract every `EventLog` store passes (memory, sqlite, redis): one vitest suite, run by each
 * store's own test file with a factory of fresh, unopened, empty stores. Retention cases run only
 * for stores that implement `RetainingLog`.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BASE_TIME_MS, cloudEvent } from './fixtures/cloud-event.ts';
import { canPrune, type EventFilter, type EventLog, type NewEvent, type StoredEvent } from '../../src/log/EventLog.ts';

/** `count` events with ids `{prefix}-{i}` (no backend, one per minute). */
function series(prefix: string, count: number): NewEvent[] {
  return Array.from({ length: count }, (_, i) => ({ event: cloudEvent(`${prefix}-${i}`, {}, i) }));
}

/** The ids of a page or a list of stored events. */
function ids(events: StoredEvent[]): string[] {
  return events.map((stored) => stored.event.id);
}

/** Every page of a query, following `next` until it is absent. */
async function readAll(log: EventLog, filter: EventFilter, limit: number): Promise<{ events: StoredEvent[]; pages: number }> {
  const events: StoredEvent[] = [];
  let after = 0;
  for (let pages = 1; ; pages++) {
    const page = await log.query(filter, after, limit);
    events.push(...page.events);
    if (page.next === undefined) return { events, pages };
    expect(page.events).toHaveLength(limit);
    expect(page.next).toBe(page.events[page.events.length - 1].position);
    after = page.next;
  }
}

/** Resolves once `Date.now()` has moved past `ms`. */
async function clockPast(ms: number): Promise<void> {
  while (Date.now() <= ms) await new Promise((resolve) => setTimeout(resolve, 2));
}

/** Defines the contract suite for the store built by `make` (a fresh, unopened, empty store per test). */
export function eventLogContract(name: string, make: () => Promise<EventLog> | EventLog): void {
  describe(`EventLog contract: ${name}`, () => {
    let log: EventLog;

    beforeEach(async () => {
      log = await make();
      await log.open();
    });

    afterEach(async () => {
      await log.close();
    });

    describe('append and query', () => {
      it('returns appended events in log order with increasing positions', async () => {
        const batch: NewEvent[] = [
          { backend: 'orders', event: cloudEvent('a') },
          { event: cloudEvent('b', { correlationid: 'c-1', dataschema: 'https://gw/events/x/1', traceparent: '00-x' }) },
          { backend: 'payments', event: cloudEvent('c') },
        ];
        const result = await log.append(batch);
        expect(result.duplicates).toBe(0);
        expect(ids(result.appended)).toEqual(['a', 'b', 'c']);
        const positions = result.appended.map((stored) => stored.position);
        expect(positions[0]).toBeGreaterThan(0);
        expect(positions[1]).toBeGreaterThan(positions[0]);
        expect(positions[2]).toBeGreaterThan(positions[1]);

        const page = await log.query({}, 0, 10);
        expect(page.next).toBeUndefined();
        expect(page.events).toEqual(result.appended);
        expect(page.events[0].backend).toBe('orders');
        expect(page.events[1].backend).toBeUndefined();
        expect(page.events[1].event).toEqual(batch[1].event);
      });

      it('keeps order across batches', async () => {
        await log.append(series('x', 3));
        await log.append(series('y', 2));
        expect(ids((await log.query({}, 0, 10)).events)).toEqual(['x-0', 'x-1', 'x-2', 'y-0', 'y-1']);
      });

      it('returns copies a reader cannot use to change the log', async () => {
        await log.append(series('m', 1));
        const first = await log.query({}, 0, 1);
        first.events[0].event.data.changed = true;
        expect((await log.query({}, 0, 1)).events[0].event.data).not.toHaveProperty('changed');
      });

      it('appends an empty batch as a no-op', async () => {
        expect(await log.append([])).toEqual({ appended: [], duplicates: 0 });
        expect(await log.count()).toBe(0);
      });

      it('rejects a page with a bad limit or position', async () => {
        await expect(log.query({}, 0, 0)).rejects.toMatchObject({ code: 'INVALID_PARAMETER' });
        await expect(log.query({}, -1, 10)).rejects.toMatchObject({ code: 'INVALID_PARAMETER' });
        await expect(log.query({}, 0, 1.5)).rejects.toMatchObject({ code: 'INVALID_PARAMETER' });
      });
    });

    describe('duplicates', () => {
      it('skips an id already in the log, counts it, and tells no listener', async () => {
        const [first] = (await log.append([{ event: cloudEvent('a') }])).appended;
        const listener = vi.fn();
        log.subscribe(listener);
        const again = await log.append([{ event: cloudEvent('a', { type: 'Changed' }) }]);
        expect(again).toEqual({ appended: [], duplicates: 1 });
        expect(listener).not.toHaveBeenCalled();
        expect(await log.count()).toBe(1);
        expect(await log.positionOf('a')).toBe(first.position);
        expect((await log.query({}, 0, 10)).events[0].event.type).toBe('OrderPlacedV1');
      });

      it('keeps the first of two events with the same id in one batch', async () => {
        const result = await log.append([
          { event: cloudEvent('a') },
          { event: cloudEvent('a', { type: 'Second' }) },
          { event: cloudEvent('b') },
        ]);
        expect(result.duplicates).toBe(1);
        expect(ids(result.appended)).toEqual(['a', 'b']);
        const page = await log.query({}, 0, 10);
        expect(page.events.map((stored) => stored.event.type)).toEqual(['OrderPlacedV1', 'OrderPlacedV1']);
      });

      it('mixes new and known ids in one batch', async () => {
        await log.append(series('s', 2));
        const result = await log.append([...series('s', 3), { event: cloudEvent('t') }]);
        expect(result.duplicates).toBe(2);
        expect(ids(result.appended)).toEqual(['s-2', 't']);
        expect(await log.count()).toBe(4);
      });
    });

    describe('filters', () => {
      const events: NewEvent[] = [
        { backend: 'orders', event: cloudEvent('e0', { type: 'A', source: 's1', correlationid: 'k1' }, 0) },
        { backend: 'orders', event: cloudEvent('e1', { type: 'B', source: 's1', correlationid: 'k2' }, 1) },
        { backend: 'payments', event: cloudEvent('e2', { type: 'A', source: 's2', correlationid: 'k1' }, 2) },
        { event: cloudEvent('e3', { type: 'A', source: 's1' }, 3) },
        { backend: 'payments', event: cloudEvent('e4', { type: 'B', source: 's2', correlationid: 'k1' }, 4) },
        { backend: 'orders', event: cloudEvent('e5', { type: 'A', source: 's2', correlationid: 'k2' }, 5) },
      ];
      const minute = (m: number) => BASE_TIME_MS + m * 60_000;
      const cases: Array<[string, EventFilter, string[]]> = [
        ['type', { type: 'A' }, ['e0', 'e2', 'e3', 'e5']],
        ['source', { source: 's2' }, ['e2', 'e4', 'e5']],
        ['correlationId', { correlationId: 'k1' }, ['e0', 'e2', 'e4']],
        ['backend', { backend: 'orders' }, ['e0', 'e1', 'e5']],
        ['fromMs (inclusive)', { fromMs: minute(3) }, ['e3', 'e4', 'e5']],
        ['toMs (inclusive)', { toMs: minute(1) }, ['e0', 'e1']],
        ['fromMs and toMs', { fromMs: minute(1), toMs: minute(3) }, ['e1', 'e2', 'e3']],
        ['fromMs = toMs', { fromMs: minute(2), toMs: minute(2) }, ['e2']],
        ['type and correlationId', { type: 'A', correlationId: 'k1' }, ['e0', 'e2']],
        ['type, source and backend', { type: 'A', source: 's2', backend: 'orders' }, ['e5']],
        ['all six', { type: 'B', source: 's2', correlationId: 'k1', backend: 'payments', fromMs: minute(4), toMs: minute(4) }, ['e4']],
        ['no match', { type: 'A', backend: 'nobody' }, []],
        ['correlationIds (any of)', { correlationIds: ['k2', 'unknown'] }, ['e1', 'e5']],
        ['correlationIds and type', { correlationIds: ['k1', 'k2'], type: 'B' }, ['e1', 'e4']],
        ['correlationIds, empty list', { correlationIds: [] }, []],
        ['empty filter', {}, ['e0', 'e1', 'e2', 'e3', 'e4', 'e5']],
      ];

      beforeEach(async () => {
        await log.append(events);
      });

      for (const [label, filter, expected] of cases) {
        it(`filters by ${label}`, async () => {
          const page = await log.query(filter, 0, 100);
          expect(ids(page.events)).toEqual(expected);
          expect(page.next).toBeUndefined();
        });
      }

      it('never matches a time bound on an event without a parseable time', async () => {
        await log.append([{ event: cloudEvent('no-time', { time: 'not a date' }) }]);
        expect(ids((await log.query({ fromMs: 0 }, 0, 100)).events)).not.toContain('no-time');
        expect(ids((await log.query({}, 0, 100)).events)).toContain('no-time');
      });
    });

    describe('pagination', () => {
      it('walks every page without skipping or repeating, next absent on the last', async () => {
        await log.append(series('p', 250));
        const all = await readAll(log, {}, 7);
        expect(ids(all.events)).toEqual(series('p', 250).map((item) => item.event.id));
        expect(all.pages).toBe(36);
      });

      it('pages through a filter', async () => {
        const batch = Array.from({ length: 120 }, (_, i) => ({
          event: cloudEvent(`f-${i}`, { type: i % 3 === 0 ? 'Wanted' : 'Other' }),
        }));
        await log.append(batch);
        const all = await readAll(log, { type: 'Wanted' }, 6);
        expect(ids(all.events)).toEqual(batch.filter((_, i) => i % 3 === 0).map((item) => item.event.id));
      });

      it('omits next when the last page is exactly full', async () => {
        await log.append(series('q', 21));
        const all = await readAll(log, {}, 7);
        expect(all.pages).toBe(3);
        expect(all.events).toHaveLength(21);
      });

      it('returns an empty last page after the head', async () => {
        await log.append(series('h', 3));
        const head = await log.head();
        expect(await log.query({}, head, 10)).toEqual({ events: [] });
        expect(await log.query({}, head + 1000, 10)).toEqual({ events: [] });
      });

      it('sees events appended after an earlier page', async () => {
        await log.append(series('g', 2));
        const first = await log.query({}, 0, 2);
        await log.append(series('g2', 1));
        expect(ids((await log.query({}, first.events[1].position, 10)).events)).toEqual(['g2-0']);
      });
    });

    describe('positionOf', () => {
      it('knows the position of an appended id and nothing of an unknown one', async () => {
        const { appended } = await log.append(series('k', 3));
        expect(await log.positionOf('k-1')).toBe(appended[1].position);
        expect(await log.positionOf('nope')).toBeUndefined();
      });
    });

    describe('checkpoints', () => {
      it('stores a checkpoint with its batch', async () => {
        expect(await log.checkpoint('poll:orders')).toBeUndefined();
        await log.append(series('c', 2), { key: 'poll:orders', value: 'cursor-1' });
        expect(await log.checkpoint('poll:orders')).toBe('cursor-1');
      });

      it('moves the checkpoint even when every event of the batch is a duplicate', async () => {
        await log.append(series('c', 2), { key: 'poll:orders', value: 'cursor-1' });
        const result = await log.append(series('c', 2), { key: 'poll:orders', value: 'cursor-2' });
        expect(result.duplicates).toBe(2);
        expect(await log.checkpoint('poll:orders')).toBe('cursor-2');
      });

      it('stores neither events nor checkpoint when the batch fails', async () => {
        await log.append(series('ok', 1), { key: 'poll:orders', value: 'before' });
        const broken = { event: cloudEvent('broken', { data: { amount: 10n } }) };
        await expect(log.append([{ event: cloudEvent('good') }, broken], { key: 'poll:orders', value: 'after' })).rejects.toThrow();
        expect(await log.checkpoint('poll:orders')).toBe('before');
        expect(await log.positionOf('good')).toBeUndefined();
        expect(await log.count()).toBe(1);
      });

      it('saves and overwrites a checkpoint on its own', async () => {
        await log.saveCheckpoint({ key: 'follow:payments', value: '1' });
        await log.saveCheckpoint({ key: 'follow:payments', value: '2' });
        await log.saveCheckpoint({ key: 'other', value: 'x' });
        expect(await log.checkpoint('follow:payments')).toBe('2');
        expect(await log.checkpoint('other')).toBe('x');
        expect(await log.count()).toBe(0);
      });
    });

    describe('subscribe', () => {
      it('delivers each append once, in order, and stops after unsubscribe', async () => {
        const seen: string[][] = [];
        const unsubscribe = log.subscribe((events) => seen.push(ids(events)));
        await log.append(series('a', 2));
        await log.append([...series('a', 2), { event: cloudEvent('b') }]);
        await log.append(series('a', 1));
        unsubscribe();
        unsubscribe();
        await log.append(series('c', 1));
        expect(seen).toEqual([['a-0', 'a-1'], ['b']]);
      });

      it('delivers the stored events with their positions', async () => {
        const received: StoredEvent[] = [];
        log.subscribe((events) => received.push(...events));
        const { appended } = await log.append(series('p', 3));
        expect(received).toEqual(appended);
      });

      it('keeps appending and notifying when a listener throws', async () => {
        const warning = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
        try {
          const seen: string[] = [];
          log.subscribe(() => {
            throw new Error('listener failure');
          });
          log.subscribe((events) => seen.push(...ids(events)));
          const result = await log.append(series('t', 2));
          expect(result.appended).toHaveLength(2);
          expect(seen).toEqual(['t-0', 't-1']);
        } finally {
          warning.mockRestore();
        }
      });
    });

    describe('head and count', () => {
      it('are 0 on an empty log and follow appends', async () => {
        expect(await log.head()).toBe(0);
        expect(await log.count()).toBe(0);
        const { appended } = await log.append(series('n', 4));
        await log.append(series('n', 4));
        expect(await log.head()).toBe(appended[3].position);
        expect(await log.count()).toBe(4);
      });
    });

    describe('retention', () => {
      it('prunes the oldest beyond maxEvents; survivors keep their positions', async () => {
        if (!canPrune(log)) return;
        const { appended } = await log.append(series('r', 10));
        const head = await log.head();
        expect((await log.prune({ maxEvents: 4, maxAgeMs: 0 })).removed).toBe(6);
        expect(await log.count()).toBe(4);
        expect(await log.head()).toBe(head);
        expect((await log.query({}, 0, 100)).events).toEqual(appended.slice(6));
        expect(await log.positionOf('r-5')).toBeUndefined();
        expect(await log.positionOf('r-6')).toBe(appended[6].position);
        expect((await log.prune({ maxEvents: 4, maxAgeMs: 0 })).removed).toBe(0);
      });

      it('prunes by append age', async () => {
        if (!canPrune(log)) return;
        const old = await log.append(series('old', 3));
        await clockPast(Date.now());
        const mark = Date.now();
        await clockPast(mark);
        const fresh = await log.append(series('new', 2));
        const maxAgeMs = 60_000;
        expect((await log.prune({ maxEvents: 0, maxAgeMs }, mark + maxAgeMs)).removed).toBe(3);
        expect((await log.query({}, 0, 100)).events).toEqual(fresh.appended);
        expect(await log.positionOf(old.appended[0].event.id)).toBeUndefined();
        expect(await log.count()).toBe(2);
      });

      it('never reuses positions after pruning everything', async () => {
        if (!canPrune(log)) return;
        await log.append(series('z', 3));
        const head = await log.head();
        expect((await log.prune({ maxEvents: 0, maxAgeMs: 1 }, Date.now() + 10_000)).removed).toBe(3);
        expect(await log.count()).toBe(0);
        expect(await log.head()).toBe(0);
        const { appended } = await log.append(series('after', 1));
        expect(appended[0].position).toBeGreaterThan(head);
      });

      it('never prunes an event after keepAfter (a durable reader has not read it) and reports what it held back', async () => {
        if (!canPrune(log)) return;
        const { appended } = await log.append(series('h', 10));
        const keepAfter = appended[2].position;
        expect(await log.prune({ maxEvents: 4, maxAgeMs: 0, keepAfter })).toEqual({ removed: 3, heldBack: 3 });
        expect((await log.query({}, 0, 100)).events).toEqual(appended.slice(3));
        // The reader moves on: what was held back goes at the next pass.
        expect(await log.prune({ maxEvents: 4, maxAgeMs: 0, keepAfter: appended[9].position })).toEqual({ removed: 3, heldBack: 0 });
        expect(await log.count()).toBe(4);
      });

      it('holds expired events back the same way', async () => {
        if (!canPrune(log)) return;
        const { appended } = await log.append(series('e', 5));
        const later = Date.now() + 10_000;
        expect(await log.prune({ maxEvents: 0, maxAgeMs: 1, keepAfter: appended[1].position }, later)).toEqual({ removed: 2, heldBack: 3 });
        expect(await log.prune({ maxEvents: 0, maxAgeMs: 1, keepAfter: 0 }, later)).toEqual({ removed: 0, heldBack: 3 });
        expect(await log.prune({ maxEvents: 0, maxAgeMs: 1 }, later)).toEqual({ removed: 3, heldBack: 0 });
      });

      it('treats 0 limits as disabled', async () => {
        if (!canPrune(log)) return;
        await log.append(series('keep', 3));
        expect((await log.prune({ maxEvents: 0, maxAgeMs: 0 }, Date.now() + 1e9)).removed).toBe(0);
        expect(await log.count()).toBe(3);
      });
    });

    describe('close', () => {
      it('is safe to call twice', async () => {
        await log.close();
        await log.close();
      });
    });
  });
}
