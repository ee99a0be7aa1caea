import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxEntry } from '../../src/commands/CommandStore.ts';
import { resultEvent, type CommandDelivery, type DeliveryOutcome } from '../../src/commands/delivery.ts';
import { Dispatcher } from '../../src/commands/dispatcher.ts';
import { RedisCommandStore } from '../../src/commands/redis-store.ts';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { commandMetrics } from '../../src/metrics/commands.ts';
import { eventually } from '../support/gateway.ts';
import { deletePrefix, PrivateRedis, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';
import { outboxEntry } from './store-contract.ts';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A delivery that answers `delivered` after `deliver` ran (it may wait, or throw). */
function delivery(deliver: (entry: OutboxEntry, signal: AbortSignal) => Promise<void>): CommandDelivery {
  return {
    async deliver(entry: OutboxEntry, signal: AbortSignal): Promise<DeliveryOutcome> {
      await deliver(entry, signal);
      return { kind: 'delivered', events: [resultEvent({ type: 'OkV1', source: 'urn:test', correlationId: entry.id, data: {} })] };
    },
    async failureEvent(entry) {
      return resultEvent({ type: 'FailedV1', source: 'urn:test', correlationId: entry.id, data: {} });
    },
  };
}

/** One replica's command store and dispatcher on the Redis at `url` under `prefix` (closed after the test); nothing started. */
async function replica(prefix: string, orders: CommandDelivery, url = SHARED_REDIS_URL) {
  const store = new RedisCommandStore({ url, prefix });
  await store.open();
  const log = new MemoryEventLog();
  await log.open();
  const registry = new Registry();
  const dispatcher = new Dispatcher({
    outbox: store, aliases: store, log, deliveries: new Map([['orders', orders]]),
    timeoutMs: 1_000, concurrency: 4, retryScheduleMs: [50], drainMs: 100,
    metrics: commandMetrics(registry), logger: pino({ level: 'silent' }),
  });
  cleanups.push(async () => {
    await dispatcher.close();
    await store.close();
  });
  return { store, dispatcher, registry };
}

/** A replica's `proto_gateway_outbox_claims_total{backend="orders",outcome}`. */
async function claims(registry: Registry, outcome: string): Promise<number> {
  const line = (await registry.metrics()).split('\n').find((l) => l.startsWith(`proto_gateway_outbox_claims_total{backend="orders",outcome="${outcome}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}

describe('leased claims across replicas', () => {
  it('two dispatchers on one Redis outbox deliver every command exactly once', async () => {
    const prefix = randomPrefix();
    cleanups.push(() => deletePrefix(SHARED_REDIS_URL, prefix));
    const deliveredBy = new Map<string, string[]>();
    const recording = (name: string) => delivery(async (entry) => {
      deliveredBy.set(entry.id, [...(deliveredBy.get(entry.id) ?? []), name]);
      // Slow enough that both replicas claim while the other has entries in flight.
      await new Promise((resolve) => setTimeout(resolve, 5));
    });
    const [a, b] = [await replica(prefix, recording('a')), await replica(prefix, recording('b'))];
    for (let i = 0; i < 60; i++) await a.store.enqueue({ ...outboxEntry(`cmd-${i}`), nextAttemptMs: 0 });
    await Promise.all([a.dispatcher.start(), b.dispatcher.start()]);
    await eventually(async () => (await a.store.depth()) === 0, 20_000);
    expect(deliveredBy.size).toBe(60);
    expect([...deliveredBy.values()].filter((by) => by.length !== 1)).toEqual([]);
    const shares = [...deliveredBy.values()].flat();
    expect(shares.filter((n) => n === 'a').length + shares.filter((n) => n === 'b').length).toBe(60);
    const [claimedA, claimedB] = await Promise.all([claims(a.registry, 'claimed'), claims(b.registry, 'claimed')]);
    expect(claimedA + claimedB).toBe(60);
  });

  it('counts claims, reclaims of a dead replica\'s entries and releases at shutdown (proto_gateway_outbox_claims_total)', async () => {
    const prefix = randomPrefix();
    cleanups.push(() => deletePrefix(SHARED_REDIS_URL, prefix));
    const delivered: string[] = [];
    const survivor = await replica(prefix, delivery(async (entry, signal) => {
      // The stuck command's attempt lasts until the shutdown aborts it.
      if (entry.id === 'stuck') await new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason)));
      delivered.push(entry.id);
    }));
    for (const id of ['dead-0', 'dead-1', 'dead-2']) await survivor.store.enqueue({ ...outboxEntry(id), nextAttemptMs: 0 });
    // A replica claimed these and died: no completion, no reschedule; its short lease runs out.
    const dead = await survivor.store.claimDue('orders', Date.now(), 10, 200);
    expect(dead.map((e) => e.reclaimed)).toEqual([false, false, false]);
    for (const id of ['fresh', 'stuck']) await survivor.store.enqueue({ ...outboxEntry(id), nextAttemptMs: 0 });
    await survivor.dispatcher.start();
    await eventually(() => delivered.length === 4, 20_000);
    expect(delivered.sort()).toEqual(['dead-0', 'dead-1', 'dead-2', 'fresh']);
    expect(await claims(survivor.registry, 'reclaimed')).toBe(3);
    expect(await claims(survivor.registry, 'claimed')).toBe(2);
    expect(await claims(survivor.registry, 'released')).toBe(0);
    await survivor.dispatcher.close();
    expect(await claims(survivor.registry, 'released')).toBe(1);
    // Released: due again at once for whoever comes next, as a plain claim.
    expect((await survivor.store.claimDue('orders', Date.now(), 10, 1000)).map((e) => ({ id: e.id, reclaimed: e.reclaimed }))).toEqual([{ id: 'stuck', reclaimed: false }]);
  });
});

describe('entries that come with no notice', () => {
  it('takes over the entries another replica claimed and died with after this one\'s last look found the outbox empty', async () => {
    const prefix = randomPrefix();
    cleanups.push(() => deletePrefix(SHARED_REDIS_URL, prefix));
    const delivered: string[] = [];
    const survivor = await replica(prefix, delivery(async (entry) => void delivered.push(entry.id)));
    let looks = 0;
    const nextDueMs = survivor.store.nextDueMs.bind(survivor.store);
    survivor.store.nextDueMs = async () => {
      const next = await nextDueMs();
      looks++;
      return next;
    };
    await survivor.dispatcher.start();
    await eventually(() => looks > 0);
    // Another replica accepts two commands claimed for its own dispatcher (as its group commit
    // does) and dies: nothing tells the survivor, whose outbox was empty when it last looked.
    const dead = new RedisCommandStore({ url: SHARED_REDIS_URL, prefix });
    await dead.open();
    for (const id of ['orphan-1', 'orphan-2']) await dead.enqueue({ ...outboxEntry(id), nextAttemptMs: 0 });
    expect(await dead.claimDue('orders', Date.now(), 10, 200)).toHaveLength(2);
    await dead.close();
    await eventually(() => delivered.length === 2, 10_000);
    expect(delivered.sort()).toEqual(['orphan-1', 'orphan-2']);
    expect(await claims(survivor.registry, 'reclaimed')).toBe(2);
  });
});

describe('shutdown during a claim', () => {
  it('releases every entry it had just claimed, so none waits for its lease', async () => {
    const prefix = randomPrefix();
    cleanups.push(() => deletePrefix(SHARED_REDIS_URL, prefix));
    const delivered: string[] = [];
    const { store, dispatcher, registry } = await replica(prefix, delivery(async (entry) => void delivered.push(entry.id)));
    for (const id of ['a', 'b', 'c']) await store.enqueue({ ...outboxEntry(id), nextAttemptMs: 0 });
    // The shutdown begins while the claim is on its way to the store.
    let closed: Promise<void> | undefined;
    const claimDue = store.claimDue.bind(store);
    store.claimDue = async (...args) => {
      const claimed = await claimDue(...args);
      closed ??= dispatcher.close();
      return claimed;
    };
    await dispatcher.start();
    await eventually(() => closed !== undefined);
    await closed;
    expect(delivered).toEqual([]);
    expect([await claims(registry, 'claimed'), await claims(registry, 'released')]).toEqual([3, 3]);
    const again = await claimDue('orders', Date.now(), 10, 1000);
    expect(again.map((e) => ({ id: e.id, reclaimed: e.reclaimed }))).toEqual(['a', 'b', 'c'].map((id) => ({ id, reclaimed: false })));
  });
});

describe('a dispatcher across a Redis restart', () => {
  it('completes a command delivered while Redis was down once it returns, instead of delivering it again', async () => {
    const server = await PrivateRedis.start(['--appendonly', 'yes', '--appendfsync', 'always']);
    cleanups.push(() => server.dispose());
    let restarted: Promise<void> | undefined;
    const delivered: string[] = [];
    const { store, dispatcher } = await replica(randomPrefix(), delivery(async (entry) => {
      delivered.push(entry.id);
      // The backend took the command; Redis dies before the dispatcher can record it, and comes back.
      if (!restarted) {
        await server.crash();
        restarted = server.start();
      }
    }), server.url);
    await store.enqueue({ ...outboxEntry('x'), nextAttemptMs: 0 });
    await dispatcher.start();
    await eventually(() => restarted !== undefined, 10_000);
    await restarted;
    await eventually(async () => store.ready() && (await store.depth()) === 0, 20_000, 100);
    expect(delivered).toEqual(['x']);
  }, 30_000);
});
