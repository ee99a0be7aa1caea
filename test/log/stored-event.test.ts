import { describe, expect, it } from 'vitest';
import { storedEventOf } from '../../src/log/history.ts';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { cloudEvent } from './fixtures/cloud-event.ts';

describe('storedEventOf: one event of the log by id', () => {
  it('finds the event with its position and backend, and nothing for an id the log does not hold', async () => {
    const log = new MemoryEventLog();
    await log.open();
    await log.append([{ event: cloudEvent('a') }, { backend: 'orders', event: cloudEvent('b') }, { event: cloudEvent('c') }]);
    expect(await storedEventOf(log, 'b')).toMatchObject({ position: 2, backend: 'orders', event: { id: 'b' } });
    expect(await storedEventOf(log, 'a')).toMatchObject({ position: 1, event: { id: 'a' } });
    expect(await storedEventOf(log, 'nope')).toBeUndefined();
    await log.close();
  });

  it('answers undefined rather than a neighbour when the id maps to a position holding another event', async () => {
    const log = new MemoryEventLog();
    await log.open();
    await log.append([{ event: cloudEvent('a') }, { event: cloudEvent('b') }]);
    const stale = { positionOf: async () => 2, query: log.query.bind(log) };
    expect(await storedEventOf(stale, 'a')).toBeUndefined();
    await log.close();
  });
});
