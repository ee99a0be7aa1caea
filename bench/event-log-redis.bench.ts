/**
 * Ingest throughput of the event log on Redis: appends of pages of 10 events with their checkpoint
 * (what a follower writes), against the SQLite log measured in the same run (the baseline: one
 * replica's default store). Figures: one Redis log on the shared Redis, two logs on one prefix
 * (two replicas appending at once, total; each also receives the other's events through the
 * live fan-out, which is part of the cost), and live fan-out: how long until the other replica's
 * subscriber has every event, as events per second end to end. 8 appends in flight per log.
 *
 * Then ingestion end to end, through gateways: two protocol backends (the payments example) each
 * publish half of INGESTED events at once, and the figure is events per second until the gateways'
 * log holds them all (the followers page through the backends' `/events`, leased per backend on
 * Redis), for one gateway on Redis and two on one prefix, against one gateway on SQLite.
 *
 * Last, the first page of a time-window-only query (`from`/`to`) on the Redis log over one day vs
 * over one minute, in the middle of a log of events one second apart: served in log order from the
 * time buckets (ZRANGEBYSCORE … LIMIT), the cost should not grow with the window (target: day ≤ 1.5×
 * minute, as on SQLite).
 *
 *   npx --no-install node --disable-warning=ExperimentalWarning bench/event-log-redis.bench.ts [--quick]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pino from 'pino';
import { startPaymentsService } from '../examples/payments-service.ts';
import { startGateway, type Gateway } from '../src/app.ts';
import { parseConfig } from '../src/gateway-config.ts';
import type { EventLog, NewEvent } from '../src/log/EventLog.ts';
import { RedisEventLog } from '../src/log/redis.ts';
import { SqliteEventLog } from '../src/log/sqlite.ts';
import { benchRedisUrl, deletePrefix } from './support/redis.ts';
import { BenchReport, sized } from './support/report.ts';

const PAGES = sized(3_000, 400);
const INGESTED = sized(40_000, 6_000);
const PAGE = 10;
const IN_FLIGHT = 8;
const SHARED = await benchRedisUrl();

function page(n: number): NewEvent[] {
  return Array.from({ length: PAGE }, (_, i) => ({
    backend: 'payments',
    event: {
      specversion: '1.0', id: randomUUID(), source: 'urn:bench', type: i % 2 ? 'PaymentAuthorizedV1' : 'PaymentRefundedV1',
      datacontenttype: 'application/json', correlationid: `c-${n}`, time: new Date().toISOString(), data: { amount: n },
    },
  }));
}

/** Appends `pages` pages spread over `logs`, IN_FLIGHT per log; returns events per second. */
async function ingestRate(logs: EventLog[], pages: number): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async (log: EventLog) => {
    while (next < pages) {
      const n = next++;
      await log.append(page(n), { key: 'follow:payments', value: String(n) });
    }
  };
  await Promise.all(logs.flatMap((log) => Array.from({ length: IN_FLIGHT }, () => worker(log))));
  return (pages * PAGE) / ((performance.now() - started) / 1000);
}

const report = new BenchReport('event-log-redis');
const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-log-'));
const sqliteLog = new SqliteEventLog(join(dir, 'gateway.db'));
await sqliteLog.open();
await ingestRate([sqliteLog], Math.min(50, PAGES));
const sqlite = await ingestRate([sqliteLog], PAGES);
await sqliteLog.close();
rmSync(dir, { recursive: true, force: true });

async function onRedis(replicas: number): Promise<{ rate: number; fanout: number }> {
  const prefix = `bench:${randomUUID()}:`;
  const logs = Array.from({ length: replicas }, () => new RedisEventLog({ url: SHARED, prefix }));
  for (const log of logs) await log.open();
  try {
    await ingestRate(logs, Math.min(50, PAGES));
    // A subscriber on the last log counts what reaches it (its own appends and the other replica's).
    let seen = 0;
    const all = new Promise<void>((resolve) => logs.at(-1)!.subscribe((events) => {
      seen += events.length;
      if (seen >= PAGES * PAGE) resolve();
    }));
    const started = performance.now();
    const rate = await ingestRate(logs, PAGES);
    await all;
    return { rate, fanout: (PAGES * PAGE) / ((performance.now() - started) / 1000) };
  } finally {
    for (const log of logs) await log.close();
    await deletePrefix(SHARED, prefix);
  }
}

const one = await onRedis(1);
const two = await onRedis(2);
const figure = (name: string, gateway: number) =>
  report.add({ name, unit: 'events/s', gateway, baseline: sqlite, baselineName: 'sqlite log (1 replica)', better: 'higher' });
figure('redis log, 1 replica', one.rate);
figure('redis log, 2 replicas on one prefix (total)', two.rate);
figure('redis log, 2 replicas: every event at the other replica\'s subscriber', two.fanout);

/**
 * Events per second ingested through `replicas` gateways on `storage` (YAML) from two payments
 * backends that publish INGESTED events between them at once.
 */
async function gatewayIngestRate(storage: string, replicas: number): Promise<number> {
  const backends = [await startPaymentsService({ port: 0 }), await startPaymentsService({ port: 0 })];
  const yaml = `server: { host: 127.0.0.1, port: 0 }\n${storage}\nbackends:\n${backends
    .map((b, i) => `  - id: pay-${i}\n    kind: proto\n    url: "${b.url}"\n    events: { follow: poll, interval: 50ms }\n`)
    .join('')}`;
  const gateways: Gateway[] = [];
  try {
    for (let i = 0; i < replicas; i++) gateways.push(await startGateway(await parseConfig(yaml, join(ingestDir, 'gateway.yaml')), { logger: pino({ level: 'silent' }) }));
    for (let n = 0; n < INGESTED; n++) backends[n % 2]!.emit('PaymentRefundedV1', { orderId: `o-${n}` });
    const started = performance.now();
    while ((await gateways[0]!.log.count()) < INGESTED) await sleep(10);
    return INGESTED / ((performance.now() - started) / 1000);
  } finally {
    for (const gateway of gateways) await gateway.close();
    for (const backend of backends) await backend.close();
  }
}

const ingestDir = mkdtempSync(join(tmpdir(), 'pgw-bench-ingest-'));
const throughSqlite = await gatewayIngestRate(`storage: { driver: sqlite, path: "${join(ingestDir, 'gateway.db')}" }`, 1);
const ingestOn = async (replicas: number) => {
  const prefix = `bench:${randomUUID()}:`;
  try {
    return await gatewayIngestRate(`storage: { driver: redis, url: "${SHARED}", prefix: "${prefix}" }`, replicas);
  } finally {
    await deletePrefix(SHARED, prefix);
  }
};
const ingestedBy = (name: string, gateway: number) =>
  report.add({ name, unit: 'events/s', gateway, baseline: throughSqlite, baselineName: 'gateway on sqlite (1 replica)', better: 'higher' });
ingestedBy('ingest through the gateway, redis, 1 replica', await ingestOn(1));
ingestedBy('ingest through the gateway, redis, 2 replicas on one prefix', await ingestOn(2));
rmSync(ingestDir, { recursive: true, force: true });
/** Events of the time-window log, one second apart (the full run spans more than two days). */
const WINDOW_LOG_EVENTS = sized(200_000, 20_000);
const WINDOW_PAGE = 50;
const WINDOW_SAMPLES = sized(300, 60);

/** The p50 in ms of the first page of a one-minute and of a one-day time-only window, mid-log. */
async function timeWindowCosts(): Promise<{ minute: number; day: number }> {
  const prefix = `bench:${randomUUID()}:`;
  const log = new RedisEventLog({ url: SHARED, prefix });
  await log.open();
  try {
    const base = Date.parse('2030-01-01T00:00:00Z');
    for (let i = 0; i < WINDOW_LOG_EVENTS; i += 5_000) {
      await log.append(Array.from({ length: Math.min(5_000, WINDOW_LOG_EVENTS - i) }, (_, j) => ({
        backend: 'payments',
        event: { specversion: '1.0', id: `w-${i + j}`, source: 'urn:bench', type: 'PaymentAuthorizedV1', datacontenttype: 'application/json', time: new Date(base + (i + j) * 1000).toISOString(), data: { n: i + j } },
      })));
    }
    const middle = base + Math.floor(WINDOW_LOG_EVENTS / 4) * 1000;
    const p50 = async (toMs: number) => {
      const durations: number[] = [];
      for (let i = 0; i < WINDOW_SAMPLES; i++) {
        const started = performance.now();
        await log.query({ fromMs: middle, toMs }, 0, WINDOW_PAGE);
        durations.push(performance.now() - started);
      }
      return durations.sort((a, b) => a - b)[Math.floor(durations.length / 2)]!;
    };
    await p50(middle + 86_400_000 - 1); // warm-up
    return { minute: await p50(middle + 60_000 - 1), day: await p50(middle + 86_400_000 - 1) };
  } finally {
    await log.close();
    await deletePrefix(SHARED, prefix);
  }
}

const windows = await timeWindowCosts();
console.log(`\nredis time-window-only first page of ${WINDOW_PAGE} (p50): one minute ${windows.minute.toFixed(2)} ms, one day ${windows.day.toFixed(2)} ms, day/minute ${(windows.day / windows.minute).toFixed(2)}`);
report.add({ name: 'redis time window first page, one day vs one minute, p50', unit: 'ms', gateway: windows.day, baseline: windows.minute, baselineName: 'one-minute window', better: 'lower' });
report.write({ pages: PAGES, eventsPerPage: PAGE, inFlightPerLog: IN_FLIGHT, ingestedThroughGateways: INGESTED, timeWindowLogEvents: WINDOW_LOG_EVENTS });
