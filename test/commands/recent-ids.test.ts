import { describe, expect, it } from 'vitest';
import { RecentIds, slotOf } from '../../src/commands/recent-ids.ts';
import { idHash } from '../../src/commands/sqlite-command-sql.ts';

/** Every rowid `ids` holds for `hash`, in probe order. */
function recsOf(ids: RecentIds, hash: number): number[] {
  const recs: number[] = [];
  ids.find(hash, (rec) => {
    recs.push(rec);
    return false;
  });
  return recs;
}

describe('RecentIds (the SQLite writer thread index of its newest records)', () => {
  it('finds each of 100,000 hashes (52-bit, the largest included) at its rowid after growing, and no hash it was not given', () => {
    const ids = new RecentIds();
    const hashes = Array.from({ length: 100_000 }, (_, i) => idHash(`cmd-${i}`));
    hashes[0] = 2 ** 52 - 1;
    hashes[1] = 0;
    hashes.forEach((hash, i) => ids.add(hash, i + 1));
    expect(ids.size).toBe(100_000);
    // At most half full: 2^18 slots of 16 bytes.
    expect(ids.bytes).toBe(2 ** 18 * 16);
    hashes.forEach((hash, i) => expect(ids.find(hash, () => true)).toBe(i + 1));
    expect(ids.find(idHash('never-added'), () => true)).toBeUndefined();
  });

  it('keeps every rowid of one hash (an id accepted again, two ids sharing a hash): find returns the first its test accepts', () => {
    const ids = new RecentIds();
    ids.add(42, 1);
    ids.add(7, 2);
    ids.add(42, 3);
    expect(recsOf(ids, 42)).toEqual([1, 3]);
    expect(ids.find(42, (rec) => rec === 3)).toBe(3);
    expect(ids.find(42, () => false)).toBeUndefined();
  });

  it('lists every hash by key range (once per entry), the largest hash in the last range', () => {
    const ids = new RecentIds();
    const top = 2 ** 52 - 1;
    const added: Array<[number, number]> = [[900, 1], [top, 2], [2 ** 51, 3], [5, 4], [2 ** 50, 5], [5, 6]];
    for (const [hash, rec] of added) ids.add(hash, rec);
    const { hashes, starts } = ids.parts(4);
    const range = (i: number) => [...hashes.subarray(starts[i], starts[i + 1])].sort((a, b) => a - b);
    expect([...starts]).toEqual([0, 3, 4, 5, 6]);
    expect([range(0), range(1), range(2), range(3)]).toEqual([[5, 5, 900], [2 ** 50], [2 ** 51], [top]]);
    expect([...ids.parts(1).hashes].sort((a, b) => a - b)).toEqual([5, 5, 900, 2 ** 50, 2 ** 51, top]);
  });
});

describe('slotOf (where a key of RecentIds is first looked for)', () => {
  it('spreads keys that share their low 32 bits (ids a client chose for it) over the slots, and moves them with the seed', () => {
    const mask = 2 ** 16 - 1;
    const keys = Array.from({ length: 10_000 }, (_, i) => i * 2 ** 32 + 12_345);
    const slots = new Set(keys.map((key) => slotOf(key, 7, mask)));
    // 10,000 keys thrown at 65,536 slots at random fill about 9,280.
    expect(slots.size).toBeGreaterThan(9_000);
    // Keys sharing their high bits instead spread as well.
    expect(new Set(keys.map((_, i) => slotOf(2 ** 51 + i * 2 ** 16, 7, mask))).size).toBeGreaterThan(9_000);
    // Another seed, other slots: whoever does not know it cannot aim at one.
    const moved = keys.filter((key) => slotOf(key, 7, mask) !== slotOf(key, 8, mask)).length;
    expect(moved).toBeGreaterThan(9_000);
  });
});
