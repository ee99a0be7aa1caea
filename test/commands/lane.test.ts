import { describe, expect, it } from 'vitest';
import { Lane } from '../../src/commands/lane.ts';

describe('Lane (a backend\'s slots in the dispatcher)', () => {
  it('counts calls in flight and reserved slots against the concurrency', () => {
    const lane = new Lane(2);
    expect(lane.free).toBe(2);
    lane.seqs.add(1);
    lane.reserve(1);
    expect(lane.free).toBe(0);
    lane.unreserve(1);
    expect(lane.free).toBe(1);
    lane.unreserve(5); // never below none reserved
    expect(lane.free).toBe(1);
  });

  it('frees the slot of an entry whose outcome is being written, up to as many settling as the concurrency', () => {
    const lane = new Lane(2);
    lane.seqs.add(1).add(2);
    expect(lane.free).toBe(0);
    lane.settle(1);
    lane.settle(1);
    expect(lane.free).toBe(2);
    lane.seqs.add(3).add(4);
    lane.settle(1);
    // Three settling and one call: a fourth settling entry would pass the bound of twice the concurrency.
    expect(lane.free).toBe(0);
    lane.seqs.delete(1);
    lane.settle(-1);
    expect(lane.free).toBe(1);
  });

  it('is empty only with nothing in flight and nothing reserved', () => {
    const lane = new Lane(1);
    expect(lane.empty).toBe(true);
    lane.reserve(1);
    expect(lane.empty).toBe(false);
    lane.unreserve(1);
    lane.seqs.add(7);
    expect(lane.empty).toBe(false);
  });
});
