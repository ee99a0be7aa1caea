import { describe, expect, it } from 'vitest';
import { decodeCursor, encodeCursor, filterKey } from '../../src/log/cursor.ts';

const key = filterKey({ type: 'OrderPlacedV1', correlationId: 'c-1' });

function expectInvalid(cursor: string, forKey = key): void {
  expect(() => decodeCursor(cursor, forKey)).toThrow(expect.objectContaining({ code: 'INVALID_CURSOR', status: 400 }));
}

describe('event cursors', () => {
  it('round-trips a position for the same filters', () => {
    for (const position of [0, 1, 42, 1_000_000, Number.MAX_SAFE_INTEGER]) {
      expect(decodeCursor(encodeCursor(position, key), key)).toBe(position);
    }
  });

  it('is opaque url-safe text', () => {
    expect(encodeCursor(12345, key)).toMatch(/^[A-Za-z0-9_-]+$/);
    expect(encodeCursor(12345, key)).not.toContain('12345');
  });

  it('rejects a cursor made for other filters', () => {
    const cursor = encodeCursor(10, key);
    expectInvalid(cursor, filterKey({ type: 'OrderPlacedV1' }));
    expectInvalid(cursor, filterKey({}));
  });

  it('rejects a hand-edited position', () => {
    const cursor = encodeCursor(10, key);
    const [, check] = Buffer.from(cursor, 'base64url').toString().split('.');
    expectInvalid(Buffer.from(`11.${check}`).toString('base64url'));
  });

  it('rejects malformed cursors', () => {
    const valid = encodeCursor(10, key);
    for (const cursor of ['', 'abc', '!!!', `${valid}x`, valid.slice(0, -2), Buffer.from('-1.aaaa').toString('base64url'), Buffer.from('01.aaaa').toString('base64url'), '10']) {
      expectInvalid(cursor);
    }
  });

  it('refuses to encode a position that is not a non-negative integer', () => {
    expect(() => encodeCursor(-1, key)).toThrow(RangeError);
    expect(() => encodeCursor(1.5, key)).toThrow(RangeError);
  });
});

describe('filterKey', () => {
  it('is stable, short and independent of property order', () => {
    const a = filterKey({ type: 'T', source: 's', fromMs: 1 });
    const b = filterKey({ fromMs: 1, source: 's', type: 'T' });
    expect(a).toBe(b);
    expect(a.length).toBeLessThanOrEqual(16);
  });

  it('differs for every field and ignores undefined fields', () => {
    const keys = [
      filterKey({}),
      filterKey({ type: 'x' }),
      filterKey({ source: 'x' }),
      filterKey({ correlationId: 'x' }),
      filterKey({ backend: 'x' }),
      filterKey({ fromMs: 1 }),
      filterKey({ toMs: 1 }),
      filterKey({ correlationIds: ['x'] }),
      filterKey({ correlationIds: [] }),
    ];
    expect(new Set(keys).size).toBe(keys.length);
    expect(filterKey({ type: undefined })).toBe(filterKey({}));
  });

  it('treats correlationIds as a set, and keeps the keys of filters without them unchanged', () => {
    expect(filterKey({ correlationIds: ['a', 'b', 'a'] })).toBe(filterKey({ correlationIds: ['b', 'a'] }));
    expect(filterKey({ correlationIds: undefined, type: 'T' })).toBe(filterKey({ type: 'T' }));
  });

  it('does not mistake a number for the same text', () => {
    expect(filterKey({ fromMs: 1 })).not.toBe(filterKey({ type: '1' }));
  });
});
