import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SqliteHandle } from '../../src/storage/sqlite.ts';
import { idHash, migrate, prepareStatements, SCHEMA, type Statements } from '../../src/commands/sqlite-command-sql.ts';
import { IdMerge, MERGE_CHUNK } from '../../src/commands/sqlite-id-merge.ts';
import { takeOver, type OwnedState } from '../../src/commands/sqlite-owner.ts';
import { tempDir } from '../support/gateway.ts';

/** A store file holding `count` records of the writer thread's own (in memory, not merged), and the state a writer thread takes it with. */
function fileWithRecords(count: number): { handle: SqliteHandle<Statements>; state: OwnedState } {
  const handle = new SqliteHandle<Statements>('test', join(tempDir(), 'gateway.db'), { schema: SCHEMA, prepare: prepareStatements, migrate });
  handle.open();
  handle.transaction((sql) => {
    for (let rec = 1; rec <= count; rec++) sql.insertRecord.run(rec, `cmd-${rec}`, idHash(`cmd-${rec}`), 'ops', 'fp', '{}', Date.now() + 60_000);
  });
  return { handle, state: handle.transaction((sql) => takeOver(sql)) };
}

const count = (handle: SqliteHandle<Statements>, sql: string): number => (handle.db.prepare(sql).get() as { n: number }).n;

describe('IdMerge (the records indexed in the writer thread merged into command_record_ids)', () => {
  it('merges a key range per step, in as many steps as ranges of about MERGE_CHUNK, and moves merged_through with the last', () => {
    const records = 5 * MERGE_CHUNK;
    const { handle, state } = fileWithRecords(records);
    expect(state.recent.size).toBe(records);
    const merge = new IdMerge(state, records);
    let steps = 0;
    while (merge.waitMs() !== undefined) {
      handle.transaction(() => merge.step());
      merge.committed();
      steps++;
      // Each step's entries lie in one key range: no range is merged twice, none skipped.
      if (state.merging) expect(count(handle, 'SELECT merged_through AS n FROM command_store_writer')).toBe(0);
    }
    // 5 x MERGE_CHUNK ids cut into 8 ranges (the power of two at or above 5).
    expect(steps).toBe(8);
    expect(count(handle, 'SELECT COUNT(*) AS n FROM command_record_ids')).toBe(records);
    expect(count(handle, 'SELECT merged_through AS n FROM command_store_writer')).toBe(records);
    expect(state.merging).toBeUndefined();
    expect(state.recent.size).toBe(0);
    handle.close();
  });

  it('after a failed step waits a second, then merges again from its first range the records it had set aside (new ones stay in memory)', () => {
    const { handle, state } = fileWithRecords(3 * MERGE_CHUNK);
    const merge = new IdMerge(state, MERGE_CHUNK);
    handle.transaction(() => merge.step());
    merge.committed();
    const aside = state.merging;
    // The next step fails with its transaction (an I/O error): nothing of it stays.
    expect(() => handle.transaction(() => {
      merge.step();
      throw new Error('disk I/O error');
    })).toThrow('disk I/O error');
    merge.failed();
    expect(merge.waitMs()).toBeGreaterThan(900);
    expect(state.merging).toBe(aside);
    // An id accepted meanwhile goes to the new index, not into this merge.
    state.recent.add(idHash('later'), 3 * MERGE_CHUNK + 1);

    const merged = count(handle, 'SELECT COUNT(*) AS n FROM command_record_ids');
    expect(merged).toBeGreaterThan(0);
    expect(merged).toBeLessThan(3 * MERGE_CHUNK);
    let steps = 0;
    while (state.merging) {
      handle.transaction(() => merge.step());
      merge.committed();
      steps++;
    }
    // All four ranges again (the first merged twice, ignored), the rest of the records with them.
    expect(steps).toBe(4);
    expect(count(handle, 'SELECT COUNT(*) AS n FROM command_record_ids')).toBe(3 * MERGE_CHUNK);
    expect(count(handle, 'SELECT merged_through AS n FROM command_store_writer')).toBe(3 * MERGE_CHUNK);
    expect(state.recent.size).toBe(1);
    handle.close();
  });

  it('pauses after each step three times as long as the step took, unless it is behind (the next merge due already)', () => {
    const { handle, state } = fileWithRecords(4 * MERGE_CHUNK);
    const merge = new IdMerge(state, 2 * MERGE_CHUNK);
    expect(merge.waitMs()).toBe(0);
    const started = performance.now();
    handle.transaction(() => merge.step());
    merge.committed();
    const took = performance.now() - started;
    // Paced: about three times the step (rounded up to whole ms).
    expect(merge.waitMs()).toBeGreaterThanOrEqual(Math.floor(took * 3) - 1);
    expect(merge.waitMs()).toBeGreaterThan(0);
    // Behind: as many new ids as start a merge came meanwhile.
    for (let rec = 1; rec <= 2 * MERGE_CHUNK; rec++) state.recent.add(idHash(`new-${rec}`), 4 * MERGE_CHUNK + rec);
    expect(merge.waitMs()).toBe(0);
    handle.close();
  });
});
