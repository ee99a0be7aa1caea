import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { AcceptAnswer, AcceptItem, OutboxEntry } from '../../src/commands/CommandStore.ts';
import { GroupCommitter, MAX_BATCH_COUNT, type AcceptHandoff } from '../../src/commands/group-commit.ts';
import { MemoryCommandStore } from '../../src/commands/memory-store.ts';
import { closeAll, eventually, freePort, startTestGateway, tempDir } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';
import { afterEach } from 'vitest';
import { ordersBackend, placeOrder, scriptedBackend, sendJson } from './support.ts';
import { outboxEntry, record } from './store-contract.ts';

afterEach(closeAll);

/** A memory store whose commits are counted and held until released. */
function recordingStore() {
  const inner = new MemoryCommandStore();
  const batches: number[] = [];
  let gate: Promise<void> = Promise.resolve();
  return {
    inner,
    batches,
    hold() {
      let release!: () => void;
      gate = new Promise((resolve) => (release = resolve));
      return () => release();
    },
    async acceptBatch(items: AcceptItem[], nowMs: number): Promise<AcceptAnswer[]> {
      batches.push(items.length);
      await gate;
      return inner.acceptBatch(items, nowMs);
    },
  };
}

/** A handoff with a number of free slots per backend, recording what it was asked and handed. */
function recordingHandoff(slots: Record<string, number>) {
  const asked: Array<[string, number]> = [];
  const handed: Array<{ backend: string; seqs: number[]; reserved: number; claimedMs: number }> = [];
  return {
    leaseMs: 30_000,
    asked,
    handed,
    reserve(backend: string, wanted: number): number {
      asked.push([backend, wanted]);
      const granted = Math.min(wanted, slots[backend] ?? 0);
      slots[backend] = (slots[backend] ?? 0) - granted;
      return granted;
    },
    handOver(backend: string, entries: OutboxEntry[], reserved: number, claimedMs: number): void {
      handed.push({ backend, seqs: entries.map((entry) => entry.seq), reserved, claimedMs });
    },
  } satisfies AcceptHandoff & Record<string, unknown>;
}

describe('group commit', () => {
  it('commits an idle accept in the next turn of the event loop (no timer), alone; sends the accepts of a later turn as the next batch at once, without waiting for the commit in flight; answers each after its own commit', async () => {
    const store = recordingStore();
    await store.inner.open();
    const committer = new GroupCommitter(store);
    const release = store.hold();
    const first = committer.accept(record('a'), outboxEntry('a'), Date.now());
    await eventually(async () => store.batches.length === 1);
    const later = ['b', 'c', 'b'].map((id, i) => committer.accept(record(id, i === 2 ? { principal: 'other' } : {}), outboxEntry(id), Date.now()));
    let settled = false;
    void Promise.all(later).then(() => (settled = true));
    // The second batch reaches the store while the first is still held (the store merges or pipelines them).
    await eventually(async () => store.batches.length === 2);
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(false);
    release();
    expect(await first).toEqual({ seq: 1, claimed: false });
    // The second b is answered with the first b's record: exact inside one batch.
    expect(await Promise.all(later)).toEqual([{ seq: 2, claimed: false }, { seq: 3, claimed: false }, { holder: record('b') }]);
    expect(store.batches).toEqual([1, 3]);
  });

  it('claims new entries for the local dispatcher in the commit, as many as it reserved slots for, and hands them over once durable', async () => {
    const store = new MemoryCommandStore();
    await store.open();
    const handoff = recordingHandoff({ orders: 2 });
    const committer = new GroupCommitter(store, handoff);
    // The clock of the entries (outboxEntry's), so that what is due is what is not claimed.
    const now = Date.parse('2030-01-01T00:00:00Z');
    const answers = await Promise.all([
      committer.accept(record('a'), outboxEntry('a'), now),
      committer.accept(record('b', { principal: 'other' }), outboxEntry('b', 'payments'), now),
      committer.accept(record('a', { principal: 'other' }), outboxEntry('a'), now),
      committer.accept(record('c'), outboxEntry('c'), now),
      committer.accept(record('d'), outboxEntry('d'), now),
    ]);
    // Two slots for orders: a and c (the repeat of a is answered by a's record and takes none); d waits in the outbox.
    expect(answers).toEqual([{ seq: 1, claimed: true }, { seq: 2, claimed: false }, { holder: record('a') }, { seq: 3, claimed: true }, { seq: 4, claimed: false }]);
    expect(handoff.asked).toEqual([['orders', 4], ['payments', 1]]);
    expect(handoff.handed).toEqual([{ backend: 'orders', seqs: [1, 3], reserved: 2, claimedMs: now }]);
    expect((await store.due('orders', now, 10)).map((e) => e.id)).toEqual(['d']);
    expect((await store.due('payments', now, 10)).map((e) => e.id)).toEqual(['b']);
    // Claimed with the handoff's lease: back, reclaimed, when it runs out.
    expect((await store.claimDue('orders', now + handoff.leaseMs, 10, 1000)).map((e) => [e.id, e.reclaimed])).toEqual([['d', false], ['a', true], ['c', true]]);
  });

  it('gives every reserved slot back when the commit fails, and claims nothing', async () => {
    const handoff = recordingHandoff({ orders: 5 });
    const committer = new GroupCommitter({ acceptBatch: async () => Promise.reject(new Error('disk full')) }, handoff);
    await expect(committer.accept(record('a'), outboxEntry('a'), Date.now())).rejects.toThrow('disk full');
    expect(handoff.handed).toEqual([{ backend: 'orders', seqs: [], reserved: 1, claimedMs: expect.any(Number) }]);
  });

  it('fails the callers of a batch, and not the process, when the handoff throws (a bug) around the commit; the next batch still commits', async () => {
    const store = new MemoryCommandStore();
    await store.open();
    let broken = true;
    const handoff = {
      leaseMs: 30_000,
      reserve: (): number => {
        if (broken) throw new Error('handoff bug');
        return 0;
      },
      handOver: (): void => {},
    } satisfies AcceptHandoff;
    const committer = new GroupCommitter(store, handoff);
    await expect(committer.accept(record('a'), outboxEntry('a'), Date.now())).rejects.toThrow('handoff bug');
    broken = false;
    expect(await committer.accept(record('b'), outboxEntry('b'), Date.now())).toEqual({ seq: 1, claimed: false });
  });

  it('bounds a batch by count', async () => {
    const store = recordingStore();
    await store.inner.open();
    const committer = new GroupCommitter(store);
    const release = store.hold();
    const blocker = committer.accept(record('first'), outboxEntry('first'), Date.now());
    await eventually(async () => store.batches.length === 1);
    const many = Array.from({ length: MAX_BATCH_COUNT + 10 }, (_, i) => committer.accept(record(`m${i}`), outboxEntry(`m${i}`), Date.now()));
    release();
    await Promise.all([blocker, ...many]);
    expect(store.batches).toEqual([1, MAX_BATCH_COUNT, 10]);
  });

  it('loses nothing when the gateway is killed with SIGKILL during group commits: every 201 reaches the backend, re-sent only if it was in flight, with one result event each', async () => {
    const seen = new Map<string, number>();
    const backend = await scriptedBackend((req, res) => {
      const id = String(req.headers['x-request-id']);
      seen.set(id, (seen.get(id) ?? 0) + 1);
      sendJson(res, 201, { id });
    });
    const dir = tempDir();
    const port = await freePort();
    const yaml = (p: number) => `server: { host: 127.0.0.1, port: ${p} }
storage: { driver: sqlite, path: ${join(dir, 'gateway.db')} }
commands: { dispatch: { timeout: 1s, retry: { schedule: [100ms] } } }
backends:
${ordersBackend(backend.url)}`;
    const file = join(dir, 'gateway.yaml');
    writeFileSync(file, yaml(port));
    const gw = spawnGateway(file);
    await eventually(async () => gw.logs.some((line) => line.msg === 'listening'), 20_000);
    const agent = new Agent({ connections: 64 });
    const accepted: string[] = [];
    let killed = false;
    const send = async (): Promise<void> => {
      while (!killed) {
        const command = placeOrder({ sku: 'widget', qty: 1 });
        try {
          const res = await request(`http://127.0.0.1:${port}/commands`, { method: 'POST', dispatcher: agent, headers: { 'content-type': 'application/json' }, body: JSON.stringify(command) });
          await res.body.dump();
          if (res.statusCode === 201) accepted.push(command.id as string);
        } catch {
          return;
        }
      }
    };
    const senders = Array.from({ length: 32 }, send);
    await eventually(async () => accepted.length >= 300, 20_000);
    gw.signal('SIGKILL');
    killed = true;
    await gw.exited;
    await Promise.all(senders);
    await agent.close();
    const restarted = await startTestGateway(yaml(0), {}, file);
    await eventually(async () => accepted.every((id) => seen.has(id)), 30_000);
    // The result events of the commands delivered just before the kill come with their re-delivery
    // after the restart: wait until every accepted command has one (not for a count of the log,
    // which also holds the events of commands committed but not yet answered at the kill).
    const resultEvents = async (): Promise<Map<string, number>> => {
      const perCommand = new Map<string, number>();
      for (let after = 0; ; ) {
        const page = await restarted.log.query({}, after, 1000);
        for (const stored of page.events) perCommand.set(String(stored.event.correlationid), (perCommand.get(String(stored.event.correlationid)) ?? 0) + 1);
        if (page.next === undefined) return perCommand;
        after = page.next;
      }
    };
    const perCommand = await eventually(async () => {
      const counted = await resultEvents();
      return accepted.every((id) => counted.has(id)) ? counted : undefined;
    }, 30_000);
    // At least once: only attempts in flight at the kill (at most the dispatch concurrency, 16) are
    // sent again, under the same command id, so an idempotent backend applies each once.
    expect(accepted.filter((id) => (seen.get(id) ?? 0) > 1).length).toBeLessThanOrEqual(16);
    // Exactly one result event per accepted command (deterministic result-event ids).
    expect(accepted.filter((id) => perCommand.get(id) !== 1)).toEqual([]);
  }, 90_000);
});
