import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DueIndex, type DueItem } from '../../src/commands/due-index.ts';

/** One step against the index and the model: put (add or move), delete, or take. */
type Op = { put: number; dueMs: number } | { delete: number } | { take: number; nowMs: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ put: fc.integer({ min: 1, max: 40 }), dueMs: fc.integer({ min: 0, max: 50 }) }),
  fc.record({ delete: fc.integer({ min: 1, max: 40 }) }),
  fc.record({ take: fc.integer({ min: 0, max: 6 }), nowMs: fc.integer({ min: 0, max: 60 }) }),
);

describe('DueIndex (the memory outbox in due order)', () => {
  it('takes what a sort of its items by due time, then seq, would give, through any puts, moves and deletes', () => {
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const index = new DueIndex<DueItem>();
        const model = new Map<number, number>();
        for (const step of ops) {
          if ('put' in step) {
            index.put({ seq: step.put, nextAttemptMs: step.dueMs });
            model.set(step.put, step.dueMs);
          } else if ('delete' in step) {
            index.delete(step.delete);
            model.delete(step.delete);
          } else {
            const expected = [...model].filter(([, due]) => due <= step.nowMs).sort((a, b) => a[1] - b[1] || a[0] - b[0]).slice(0, step.take);
            expect(index.take(step.nowMs, step.take).map((item) => [item.seq, item.nextAttemptMs])).toEqual(expected);
            for (const [seq] of expected) model.delete(seq);
          }
          expect(index.size).toBe(model.size);
          expect(index.earliestMs()).toBe(model.size === 0 ? undefined : Math.min(...model.values()));
        }
      }),
    );
  });

  it('stays in order when every item moves again and again (the places left behind are dropped in rebuilds)', () => {
    const index = new DueIndex<DueItem>();
    const items = Array.from({ length: 100 }, (_, i) => ({ seq: i + 1, nextAttemptMs: 0 }));
    for (const item of items) index.put(item);
    for (let round = 1; round <= 50; round++) {
      for (const item of items) {
        item.nextAttemptMs = round;
        index.put(item);
      }
    }
    expect(index.size).toBe(100);
    expect(index.take(50, 1000).map((item) => item.seq)).toEqual(items.map((item) => item.seq));
    expect(index.earliestMs()).toBeUndefined();
  });
});
