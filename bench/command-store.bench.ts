/**
 * Command store accept throughput: the atomic accept (idempotency record + outbox entry) of the
 * Redis store, against the SQLite store measured in the same run (the baseline: one replica's
 * default store). Figures: one Redis store on the shared Redis, two stores on one prefix (two
 * replicas accepting at once, total), and one store on a Redis started here with
 * `--appendonly yes --appendfsync always` (every accept fsynced before its answer). 32 accepts in
 * flight per store, each with a fresh id.
 *
 * Then commands end to end, through gateways: `POST /commands` of COMMANDS fresh commands, 32 in
 * flight, answered 201 by one gateway on Redis and by two on one prefix (the clients alternate
 * between them), against one gateway on SQLite; each gateway also delivers what it accepted to a
 * loopback backend meanwhile, as in production.
 *
 *   npx --no-install node --disable-warning=ExperimentalWarning bench/command-store.bench.ts [--quick]
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer } from 'node:http';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { request } from 'undici';
import { startGateway, type Gateway } from '../src/app.ts';
import type { CommandStore, NewOutboxEntry } from '../src/commands/CommandStore.ts';
import { RedisCommandStore } from '../src/commands/redis-store.ts';
import { SqliteCommandStore } from '../src/commands/sqlite-store.ts';
import { parseConfig } from '../src/gateway-config.ts';
import { benchRedisUrl, deletePrefix } from './support/redis.ts';
import { BenchReport, sized } from './support/report.ts';

const ACCEPTS = sized(20_000, 3_000);
const COMMANDS = sized(10_000, 1_500);
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

async function measure(open: () => Promise<CommandStore[]>, close: (stores: CommandStore[]) => Promise<void>): Promise<number> {
  const stores = await open();
  try {
    await acceptRate(stores, Math.min(500, ACCEPTS)); // warm-up
    return await acceptRate(stores, ACCEPTS);
  } finally {
    await close(stores);
  }
}

const SHARED = await benchRedisUrl();
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

/** A legacy backend taking every order (201), and the gateway YAML of it on `storage`. */
async function gatewayYaml(storage: string): Promise<{ yaml: string; close(): Promise<void> }> {
  const backend = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(201, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((resolve) => backend.listen(0, '127.0.0.1', resolve));
  const { port } = backend.address() as { port: number };
  const yaml = `server: { host: 127.0.0.1, port: 0 }
${storage}
backends:
  - id: orders
    kind: legacy
    url: http://127.0.0.1:${port}
    commands:
      - type: PlaceOrder
        schema: place-order
        version: "1.0"
        jsonSchema: { type: object, required: [sku, qty], properties: { sku: { type: string }, qty: { type: integer } } }
        request: { method: POST, path: /orders, body: "data" }
`;
  return { yaml, close: () => new Promise<void>((resolve) => backend.close(() => resolve())) };
}

/** Commands per second answered 201 by `replicas` gateways on `storage` (YAML), IN_FLIGHT clients alternating between them. */
async function gatewayAcceptRate(storage: string, replicas: number): Promise<number> {
  const { yaml, close } = await gatewayYaml(storage);
  const gateways: Gateway[] = [];
  try {
    for (let i = 0; i < replicas; i++) gateways.push(await startGateway(await parseConfig(yaml, join(dir, 'gateway.yaml')), { logger: pino({ level: 'silent' }) }));
    let next = 0;
    const send = async (): Promise<void> => {
      while (next < COMMANDS) {
        const id = randomUUID();
        const gateway = gateways[next++ % replicas]!;
        const res = await request(`${gateway.url}commands`, {
          method: 'POST', headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ specversion: '1.0', id, source: 'urn:bench', type: 'PlaceOrder', datacontenttype: 'application/json', dataschema: 'place-order/1.0', time: new Date().toISOString(), data: { sku: 'widget', qty: 2 } }),
        });
        await res.body.dump();
        if (res.statusCode !== 201) throw new Error(`POST /commands answered ${res.statusCode}`);
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: IN_FLIGHT }, send));
    return COMMANDS / ((performance.now() - started) / 1000);
  } finally {
    for (const gateway of gateways) await gateway.close();
    await close();
  }
}

const throughSqlite = await gatewayAcceptRate(`storage: { driver: sqlite, path: "${join(dir, 'gateway-e2e.db')}" }`, 1);
const throughRedis = async (replicas: number) => {
  const prefix = `bench:${randomUUID()}:`;
  try {
    return await gatewayAcceptRate(`storage: { driver: redis, url: "${SHARED}", prefix: "${prefix}" }`, replicas);
  } finally {
    await deletePrefix(SHARED, prefix);
  }
};
const gatewayOne = await throughRedis(1);
const gatewayTwo = await throughRedis(2);
rmSync(dir, { recursive: true, force: true });

const figure = (name: string, gateway: number) =>
  report.add({ name, unit: 'accepts/s', gateway, baseline: sqlite, baselineName: 'sqlite store (1 replica)', better: 'higher' });
figure('redis store, 1 replica', one);
figure('redis store, 2 replicas on one prefix (total)', two);
figure('redis store, appendfsync always', always);
const accepted = (name: string, gateway: number) =>
  report.add({ name, unit: 'commands/s', gateway, baseline: throughSqlite, baselineName: 'gateway on sqlite (1 replica)', better: 'higher' });
accepted('POST /commands through the gateway, redis, 1 replica', gatewayOne);
accepted('POST /commands through the gateway, redis, 2 replicas on one prefix (total)', gatewayTwo);
report.write({ accepts: ACCEPTS, inFlightPerStore: IN_FLIGHT, commandsThroughGateways: COMMANDS });
