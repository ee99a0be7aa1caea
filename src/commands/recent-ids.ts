/**
 * The newest idempotency records of the SQLite `CommandStore`, indexed in its writer thread's
 * memory: each record's id hash (`idHash`) to its rowid, for the records not yet merged into the
 * on-disk id index (`command_record_ids`). An accept then appends only (its record, its outbox
 * entry) instead of inserting its random id hash into a B-tree leaf on disk, which dirtied one
 * random page per accept (issue 29: 1.28x delivered/s and 0.90x CPU per command through the
 * gateway, BENCHMARKS.md). Once there are `mergeAt` entries the writer thread sets this index aside (a new one
 * takes the next records) and merges it into the on-disk index in key order, a key range per
 * transaction, then drops it whole (`sqlite-id-merge.ts`).
 *
 * A multimap: one hash may lead to several rowids (an id accepted again after its record expired,
 * two ids sharing a hash). Entries are never removed one by one: a rowid whose record is gone, or
 * holds another id, is skipped by the reader, which checks the record itself. Open addressing with
 * linear probing over two typed arrays (16 bytes a slot, at most half full): no object per entry
 * for the garbage collector to walk. A key's first slot mixes all its bits with a random seed
 * (`slotOf`): ids chosen so that their hashes share low bits (cheap to find) land apart, not in one
 * run of slots that every lookup would walk.
 */
import { randomInt } from 'node:crypto';

/** Slots of a new index (a power of two). */
const INITIAL_SLOTS = 1024;

/**
 * The first slot of `key` (a 52-bit hash + 1) under `seed`, of `mask + 1` slots: murmur3's
 * finaliser over its low 32 bits (xor the seed) and its high 20.
 */
export function slotOf(key: number, seed: number, mask: number): number {
  let h = Math.imul((key >>> 0) ^ seed, 0xcc9e2d51) ^ Math.floor(key / 0x1_0000_0000);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) & mask;
}

export class RecentIds {
  readonly #seed = randomInt(2 ** 31);
  /** `hash + 1` per slot (0: empty); a 52-bit hash + 1 is still a safe integer. */
  #keys = new Float64Array(INITIAL_SLOTS);
  #recs = new Float64Array(INITIAL_SLOTS);
  #size = 0;

  /** Entries held (those whose records are gone included). */
  get size(): number {
    return this.#size;
  }

  /** Bytes the index holds. */
  get bytes(): number {
    return this.#keys.byteLength + this.#recs.byteLength;
  }

  /** Adds `hash → rec`. */
  add(hash: number, rec: number): void {
    if ((this.#size + 1) * 2 > this.#keys.length) this.#resize(this.#keys.length * 2);
    this.#place(hash + 1, rec);
    this.#size++;
  }

  /** The first rowid of `hash` for which `accept(rec)` is true, or undefined. */
  find(hash: number, accept: (rec: number) => boolean): number | undefined {
    const keys = this.#keys;
    const mask = keys.length - 1;
    const key = hash + 1;
    for (let slot = slotOf(key, this.#seed, mask); keys[slot] !== 0; slot = (slot + 1) & mask) {
      if (keys[slot] === key && accept(this.#recs[slot])) return this.#recs[slot];
    }
    return undefined;
  }

  /**
   * The hashes of the entries (one per entry: a hash may repeat), cut into `parts` key ranges of equal width (a power of two, at most 2^20): `hashes` holds range
   * after range, each unsorted, range `i` from `starts[i]` to `starts[i + 1]`. Two passes over the
   * slots, no sort: a range is sorted when it is merged, so no step holds the thread long.
   */
  parts(parts: number): { hashes: Float64Array; starts: Uint32Array } {
    const width = 2 ** 52 / parts;
    const keys = this.#keys;
    const starts = new Uint32Array(parts + 1);
    for (let slot = 0; slot < keys.length; slot++) {
      if (keys[slot] !== 0) starts[Math.floor((keys[slot] - 1) / width) + 1]++;
    }
    for (let part = 0; part < parts; part++) starts[part + 1] += starts[part];
    const hashes = new Float64Array(starts[parts]);
    const next = starts.slice(0, parts);
    for (let slot = 0; slot < keys.length; slot++) {
      if (keys[slot] !== 0) hashes[next[Math.floor((keys[slot] - 1) / width)]++] = keys[slot] - 1;
    }
    return { hashes, starts };
  }

  #resize(slots: number): void {
    const keys = this.#keys;
    const recs = this.#recs;
    this.#keys = new Float64Array(slots);
    this.#recs = new Float64Array(slots);
    for (let slot = 0; slot < keys.length; slot++) if (keys[slot] !== 0) this.#place(keys[slot], recs[slot]);
  }

  #place(key: number, rec: number): void {
    const keys = this.#keys;
    const mask = keys.length - 1;
    let slot = slotOf(key, this.#seed, mask);
    while (keys[slot] !== 0) slot = (slot + 1) & mask;
    keys[slot] = key;
    this.#recs[slot] = rec;
  }
}
