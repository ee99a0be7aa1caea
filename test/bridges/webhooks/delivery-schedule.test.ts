/**
 * The in-memory schedule of the memory and SQLite delivery queues (`delivery-schedule.ts`), against
 * a model of the `DeliveryQueue` claim rules that scans everything (the memory queue before issue
 * 28 did it this way): generated sequences of enqueues, claims, outcomes, redeliveries and
 * cancellations, at times going back and forth, must claim the same deliveries in the same order.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PER_SUBSCRIPTION } from '../../../src/bridges/webhooks/DeliveryQueue.ts';
import { MemoryDeliveryQueue } from '../../../src/bridges/webhooks/memory-delivery-queue.ts';
import { SqliteDeliveryQueue } from '../../../src/bridges/webhooks/sqlite-delivery-queue.ts';
import { newDelivery } from './delivery-queue-contract.ts';

/** One unfinished delivery of the model. */
interface Modelled {
  id: string;
  seq: number;
  subscriptionId: string;
  dueMs: number;
  leaseUntilMs?: number;
  claim: number;
}

/** The claim rules of `DeliveryQueue`, by scanning every unfinished delivery. */
class Model {
  readonly unfinished = new Map<string, Modelled>();
  /** When each subscription can next give work, as the contract defines it, computed at its last change. */
  readonly ready = new Map<string, number>();

  update(subscriptionId: string, nowMs: number): void {
    const lane = [...this.unfinished.values()].filter((d) => d.subscriptionId === subscriptionId);
    const leases = lane.filter((d) => d.leaseUntilMs !== undefined).map((d) => d.leaseUntilMs!);
    const live = leases.filter((until) => until > nowMs);
    const candidates = live.length >= PER_SUBSCRIPTION ? live : [...leases, ...lane.filter((d) => d.leaseUntilMs === undefined).map((d) => d.dueMs)];
    if (candidates.length > 0) this.ready.set(subscriptionId, Math.min(...candidates));
    else this.ready.delete(subscriptionId);
  }

  claim(nowMs: number, limit: number, leaseMs: number): string[] {
    const claimed: string[] = [];
    for (;;) {
      const lanes = [...this.ready].filter(([, at]) => at <= nowMs).sort(([a, x], [b, y]) => x - y || (a < b ? -1 : 1));
      if (lanes.length === 0 || claimed.length >= limit) return claimed;
      const [subscriptionId] = lanes[0]!;
      const lane = [...this.unfinished.values()].filter((d) => d.subscriptionId === subscriptionId);
      const live = lane.filter((d) => d.leaseUntilMs !== undefined && d.leaseUntilMs > nowMs).length;
      const expired = lane.filter((d) => d.leaseUntilMs !== undefined && d.leaseUntilMs <= nowMs).sort((a, b) => a.leaseUntilMs! - b.leaseUntilMs! || a.seq - b.seq);
      const due = lane.filter((d) => d.leaseUntilMs === undefined && d.dueMs <= nowMs).sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq);
      for (const d of [...expired, ...due].slice(0, Math.max(0, Math.min(PER_SUBSCRIPTION - live, limit - claimed.length)))) {
        d.leaseUntilMs = nowMs + leaseMs;
        d.claim += 1;
        claimed.push(d.id);
      }
      this.update(subscriptionId, nowMs);
    }
  }
}

type Step =
  | { kind: 'enqueue'; subscription: number; at: number; count: number }
  | { kind: 'claim'; at: number; limit: number }
  | { kind: 'finish'; pick: number; outcome: 'succeeded' | 'dead' | 'retry' | 'release'; at: number; retryAt: number }
  | { kind: 'redeliver'; pick: number; at: number }
  | { kind: 'cancel'; subscription: number; all: boolean; at: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('enqueue' as const), subscription: fc.nat(4), at: fc.nat(40), count: fc.integer({ min: 1, max: 6 }) }),
  fc.record({ kind: fc.constant('claim' as const), at: fc.nat(60), limit: fc.integer({ min: 1, max: 12 }) }),
  fc.record({ kind: fc.constant('finish' as const), pick: fc.nat(), outcome: fc.constantFrom('succeeded' as const, 'dead' as const, 'retry' as const, 'release' as const), at: fc.nat(60), retryAt: fc.nat(60) }),
  fc.record({ kind: fc.constant('redeliver' as const), pick: fc.nat(), at: fc.nat(60) }),
  fc.record({ kind: fc.constant('cancel' as const), subscription: fc.nat(4), all: fc.boolean(), at: fc.nat(60) }),
);

const LEASE_MS = 10;

/** Runs `steps` on a queue and on the model; every claim must give the same ids in the same order. */
async function agree(make: () => MemoryDeliveryQueue | SqliteDeliveryQueue, steps: Step[]): Promise<void> {
  const queue = make();
  await queue.open();
  const model = new Model();
  const finished = new Map<string, { subscriptionId: string; claim: number }>();
  const claims = new Map<string, number>();
  let next = 0;
  try {
    for (const s of steps) {
      if (s.kind === 'enqueue') {
        const subscriptionId = `sub-${s.subscription}`;
        const batch = Array.from({ length: s.count }, () => newDelivery(`d-${++next}`, subscriptionId, s.at));
        await queue.enqueue(batch, s.at);
        for (const d of batch) model.unfinished.set(d.id, { id: d.id, seq: Number(d.id.slice(2)), subscriptionId, dueMs: s.at, claim: 0 });
        model.update(subscriptionId, s.at);
      } else if (s.kind === 'claim') {
        const got = await queue.claim(s.at, s.limit, LEASE_MS);
        expect(got.map((d) => d.id)).toEqual(model.claim(s.at, s.limit, LEASE_MS));
        for (const d of got) claims.set(d.id, d.claim);
      } else if (s.kind === 'finish') {
        const leased = [...model.unfinished.values()].filter((d) => d.leaseUntilMs !== undefined);
        if (leased.length === 0) continue;
        const d = leased[s.pick % leased.length]!;
        const outcome = s.outcome === 'retry' ? { status: 'pending' as const, nextAttemptMs: s.retryAt }
          : s.outcome === 'release' ? { status: 'pending' as const, nextAttemptMs: s.at, uncount: true }
          : { status: s.outcome };
        expect(await queue.finish([{ id: d.id, claim: claims.get(d.id)!, outcome }], s.at)).toEqual([true]);
        d.leaseUntilMs = undefined;
        if (outcome.status === 'pending') d.dueMs = outcome.nextAttemptMs!;
        else {
          model.unfinished.delete(d.id);
          finished.set(d.id, { subscriptionId: d.subscriptionId, claim: d.claim });
        }
        model.update(d.subscriptionId, s.at);
      } else if (s.kind === 'redeliver') {
        const ids = [...finished.keys()];
        if (ids.length === 0) continue;
        const id = ids[s.pick % ids.length]!;
        const { subscriptionId, claim } = finished.get(id)!;
        finished.delete(id);
        expect((await queue.redeliver(subscriptionId, id, s.at)).outcome).toBe('redelivered');
        model.unfinished.set(id, { id, seq: Number(id.slice(2)), subscriptionId, dueMs: s.at, claim });
        model.update(subscriptionId, s.at);
      } else {
        const subscriptionId = `sub-${s.subscription}`;
        if (s.all) await queue.deleteSubscription(subscriptionId);
        else await queue.cancelPending(subscriptionId);
        for (const d of [...model.unfinished.values()]) {
          if (d.subscriptionId === subscriptionId && (s.all || d.leaseUntilMs === undefined)) model.unfinished.delete(d.id);
        }
        for (const [id, f] of finished) if (s.all && f.subscriptionId === subscriptionId) finished.delete(id);
        model.update(subscriptionId, s.at);
      }
      expect(await queue.unfinished()).toBe(model.unfinished.size);
      expect(await queue.nextDueMs()).toBe(model.ready.size === 0 ? undefined : Math.min(...model.ready.values()));
    }
  } finally {
    await queue.close();
  }
}

describe('DeliverySchedule', () => {
  it('claims what a scan of every unfinished delivery would, in the same order (memory queue, generated sequences)', async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 80 }), (steps) => agree(() => new MemoryDeliveryQueue(), steps)), { numRuns: 300 });
  });

  it('claims what a scan of every unfinished delivery would, in the same order (SQLite queue, generated sequences)', async () => {
    await fc.assert(fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 60 }), (steps) => agree(() => new SqliteDeliveryQueue(':memory:'), steps)), { numRuns: 60 });
  });
});
