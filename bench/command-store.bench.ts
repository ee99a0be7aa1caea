/**
 * Command store accept throughput: the atomic accept (idempotency record + outbox entry) of the
 * Redis store, against the SQLite store measured in the same run (the baseline: one replica's
 * default store). Figures: one Redis store on the shared Redis, two stores on one prefix (two
 * replicas accepting at once, total), and one store on a Redis started here with
 * `--appendonly yes --appendfsync always` (every accept fsynced before its answer). 32 accepts in
 * flight per store, each with a fresh id.
 *
 *   npx --no-install node --disable-warning=ExperimentalWarning bench/command-store.bench.ts [--quick]
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { CommandStore, NewOutboxEntry } from '../src/commands/CommandStore.ts';
import { RedisCommandStore } from '../src/commands/redis-store.ts';
import { SqliteCommandStore } from '../src/commands/sqlite-store.ts';
import { BenchReport, sized } from './support/report.ts';

const ACCEPTS = sized(20_000, 3_000);
const IN_FLIGHT = 32;

function entry(id: string, now: number): NewOutboxEntry {
  return {
    id, backend: 'orders', principal: 'bench', acceptedMs: now, attempts: 0, nextAttemptMs: now,
    command: { specversion: '1.0', id, source: 'urn:bench', type: 'PlaceOrder', datacontenttype: 'application/json', dataschema: 'place-order/1.0', time: new Date(now).toISOString(), data: { sku: 'widget', qty: 2 } },
  };
}

/** Accepts `count` fresh commands with IN_FLIGHT at once; returns accepts per second. */
async function acceptRate(stores: CommandStore[], count: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async (store: CommandStore) => {
    while (next < count) {
      next++;
      const id = randomUUID();
      const now = Date.now();
      await store.accept({ id, principal: 'bench', fingerprint: id, answer: { status: 201, body: { id } }, expiresMs: now + 60_000 }, entry(id, now), now);
    }
  };
  await Promise.all(stores.flatMap((store) => Array.from({ length: IN_FLIGHT }, () => worker(store))));
  return count / ((performance.now() - started) / 1000);
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function startAofRedis(): Promise<{ url: string; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-redis-'));
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'always'], { stdio: 'ignore' });
  const url = `redis://127.0.0.1:${port}/0`;
  for (let i = 0; ; i++) {
    const probe = new Redis(url, { lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
    probe.on('error', () => {});
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      break;
    } catch (err) {
      probe.disconnect();
      if (i > 100) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    url,
    stop: () => new Promise<void>((resolve) => {
      child.once('exit', () => { rmSync(dir, { recursive: true, force: true }); resolve(); });
      child.kill('SIGTERM');
    }),
  };
}

async function deletePrefix(url: string, prefix: string): Promise<void> {
  const client = new Redis(url);
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await client.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  client.disconnect();
}

async function measure(open: () => Promise<CommandStore[]>, close: (stores: CommandStore[]) => Promise<void>): Promise<number> {
  const stores = await open();
  try {
    await acceptRate(stores, Math.min(500, ACCEPTS)); // warm-up
    return await acceptRate(stores, ACCEPTS);
  } finally {
    await close(stores);
  }
}

const SHARED = 'redis://127.0.0.1:6379/0';
const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-store-'));
const report = new BenchReport('command-store');
const closeAll = async (stores: CommandStore[]) => { for (const s of stores) await s.close(); };

const sqlite = await measure(async () => {
  const store = new SqliteCommandStore(join(dir, 'gateway.db'));
  await store.open();
  return [store];
}, closeAll);

const redisOn = (url: string, replicas: number) => {
  const prefix = `bench:${randomUUID()}:`;
  return measure(async () => {
    const stores = Array.from({ length: replicas }, () => new RedisCommandStore({ url, prefix }));
    for (const s of stores) await s.open();
    return stores;
  }, async (stores) => {
    await closeAll(stores);
    await deletePrefix(url, prefix);
  });
};

const one = await redisOn(SHARED, 1);
const two = await redisOn(SHARED, 2);
const aof = await startAofRedis();
let always: number;
try {
  always = await redisOn(aof.url, 1);
} finally {
  await aof.stop();
}
rmSync(dir, { recursive: true, force: true });

const figure = (name: string, gateway: number) =>
  report.add({ name, unit: 'accepts/s', gateway, baseline: sqlite, baselineName: 'sqlite store (1 replica)', better: 'higher' });
figure('redis store, 1 replica', one);
figure('redis store, 2 replicas on one prefix (total)', two);
figure('redis store, appendfsync always', always);
report.write({ accepts: ACCEPTS, inFlightPerStore: IN_FLIGHT });
