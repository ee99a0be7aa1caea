/**
 * Cost of claiming webhook deliveries when one subscription has a large backlog: the due index
 * (per-subscription lanes) must not walk it. Each store (memory, SQLite file, Redis on the shared server)
 * runs the dispatcher's cycle (claim the free slots, record the outcomes) over 16 subscriptions
 * with 4 due deliveries each, twice: with one more subscription at its 4-in-flight limit holding a
 * backlog of BACKLOG pending deliveries, and without it (the baseline). The ratio is the claim
 * cycle's time with the backlog over its time without: about 1 means the backlog is not read.
 *
 *   npx --no-install node --disable-warning=ExperimentalWarning bench/delivery-queue.bench.ts [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DeliveryQueue, NewDelivery } from '../src/bridges/webhooks/DeliveryQueue.ts';
import { MemoryDeliveryQueue } from '../src/bridges/webhooks/memory-delivery-queue.ts';
import { RedisDeliveryQueue } from '../src/bridges/webhooks/redis-delivery-queue.ts';
import { SqliteDeliveryQueue } from '../src/bridges/webhooks/sqlite-delivery-queue.ts';
import { benchRedisUrl, deletePrefix } from './support/redis.ts';
import { BenchReport, sized } from './support/report.ts';

const BACKLOG = sized(100_000, 20_000);
const SUBSCRIPTIONS = 16;
const ROUNDS = sized(200, 50);
const REDIS_URL = await benchRedisUrl();
const T = 1_000_000;

function delivery(id: string, subscriptionId: string): NewDelivery {
  return { id, subscriptionId, eventId: `evt-${id}`, eventType: 'OrderPlacedV1', payload: JSON.stringify({ id: `evt-${id}`, data: { orderId: id, total: 42.5 } }), nextAttemptMs: T };
}

/** Enqueues the saturated subscription's backlog and claims its 4 slots (held for the whole run). */
async function saturate(queue: DeliveryQueue): Promise<void> {
  for (let i = 0; i < BACKLOG; i += 1000) {
    await queue.enqueue(Array.from({ length: Math.min(1000, BACKLOG - i) }, (_, j) => delivery(`slow-${i + j}`, 'slow')), T);
  }
  if ((await queue.claim(T, 4, 1e12)).length !== 4) throw new Error('the slow subscription was not saturated');
}

/** Microseconds per delivery of ROUNDS rounds: enqueue 4 per subscription, claim until none is due, record every outcome in one write. */
async function cycle(queue: DeliveryQueue, run: string): Promise<number> {
  let busy = 0;
  let delivered = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const now = T + 1 + r;
    await queue.enqueue(Array.from({ length: SUBSCRIPTIONS * 4 }, (_, i) => delivery(`${run}-${r}-${i}`, `sub-${i % SUBSCRIPTIONS}`)), now);
    const started = performance.now();
    const claimed = await queue.claim(now, 64, 60_000);
    await queue.finish(claimed.map((d) => ({ id: d.id, claim: d.claim, outcome: { status: 'succeeded' as const } })), now);
    busy += performance.now() - started;
    delivered += claimed.length;
  }
  if (delivered !== ROUNDS * SUBSCRIPTIONS * 4) throw new Error(`claimed ${delivered} of ${ROUNDS * SUBSCRIPTIONS * 4}`);
  return (busy * 1000) / delivered;
}

async function measure(open: () => Promise<DeliveryQueue>, withBacklog: boolean): Promise<number> {
  const queue = await open();
  try {
    if (withBacklog) await saturate(queue);
    return await cycle(queue, withBacklog ? 'b' : 'n');
  } finally {
    await queue.close();
  }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-dq-'));
  const report = new BenchReport('delivery-queue');
  const prefixes: string[] = [];
  const stores: Record<string, () => Promise<DeliveryQueue>> = {
    memory: async () => new MemoryDeliveryQueue(),
    sqlite: async () => {
      const queue = new SqliteDeliveryQueue(join(dir, `${prefixes.push('x')}.db`));
      await queue.open();
      return queue;
    },
    redis: async () => {
      const prefix = `bench:dq:${Date.now()}:${prefixes.length}:`;
      prefixes.push(prefix);
      const queue = new RedisDeliveryQueue({ url: REDIS_URL, prefix });
      await queue.open();
      return queue;
    },
  };
  console.log(`claim + finish per delivery: ${SUBSCRIPTIONS} subscriptions x 4 due, ${ROUNDS} rounds; backlog ${BACKLOG.toLocaleString('en-US')} pending on one saturated subscription\n`);
  try {
    for (const [name, open] of Object.entries(stores)) {
      const without = await measure(open, false);
      const backlog = await measure(open, true);
      console.log(`${name.padEnd(8)} ${without.toFixed(1).padStart(8)} µs/delivery without backlog ${backlog.toFixed(1).padStart(8)} µs/delivery with it`);
      report.add({ name: `${name}: claim + finish with a ${BACKLOG}-delivery backlog on a saturated subscription`, unit: 'µs/delivery', gateway: backlog, baseline: without, baselineName: 'same without the backlog', better: 'lower' });
    }
    report.write({ backlog: BACKLOG, subscriptions: SUBSCRIPTIONS, rounds: ROUNDS });
  } finally {
    rmSync(dir, { recursive: true, force: true });
    for (const prefix of prefixes.filter((p) => p.startsWith('bench:'))) await deletePrefix(REDIS_URL, prefix);
  }
}

await main();
