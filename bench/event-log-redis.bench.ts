/**
 * Ingest throughput of the event log on Redis: appends of pages of 10 events with their checkpoint
 * (what a follower writes), against the SQLite log measured in the same run (the baseline: one
 * replica's default store). Figures: one Redis log on the shared Redis, two logs on one prefix
 * (two replicas appending at once, total; each also receives the other's events through the
 * live fan-out, which is part of the cost), and live fan-out: how long until the other replica's
 * subscriber has every event, as events per second end to end. 8 appends in flight per log.
 *
 *   npx --no-install node --disable-warning=ExperimentalWarning bench/event-log-redis.bench.ts [--quick]
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import type { EventLog, NewEvent } from '../src/log/EventLog.ts';
import { RedisEventLog } from '../src/log/redis.ts';
import { SqliteEventLog } from '../src/log/sqlite.ts';
import { BenchReport, sized } from './support/report.ts';

const PAGES = sized(3_000, 400);
const PAGE = 10;
const IN_FLIGHT = 8;
const SHARED = 'redis://127.0.0.1:6379/0';

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

async function deletePrefix(prefix: string): Promise<void> {
  const client = new Redis(SHARED);
  let cursor = '0';
  do {
    const [nextCursor, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await client.del(...keys);
    cursor = nextCursor;
  } while (cursor !== '0');
  client.disconnect();
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
    await deletePrefix(prefix);
  }
}

const one = await onRedis(1);
const two = await onRedis(2);
const figure = (name: string, gateway: number) =>
  report.add({ name, unit: 'events/s', gateway, baseline: sqlite, baselineName: 'sqlite log (1 replica)', better: 'higher' });
figure('redis log, 1 replica', one.rate);
figure('redis log, 2 replicas on one prefix (total)', two.rate);
figure('redis log, 2 replicas: every event at the other replica\'s subscriber', two.fanout);
report.write({ pages: PAGES, eventsPerPage: PAGE, inFlightPerLog: IN_FLIGHT });
