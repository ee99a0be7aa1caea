/**
 * Event log benchmark: the SQLite store against raw `node:sqlite` doing the same work, side by side
 * in one run. Run with `node bench/event-log.bench.ts [--quick]`; BENCH_EVENTS sets the size of the
 * query log (default 1,000,000; 100,000 with `--quick`, which also appends fewer events). Prints a
 * `ratio` line per figure and writes `bench/results/event-log.json` (bench/support/report.ts):
 *
 * 1. append throughput (events/s), batches of 100 and of 1, vs raw prepared INSERTs of the same rows
 *    in transactions of the same size (median of 3 alternating rounds);
 * 2. `query({ correlationId })` latency p50/p99 on a log of BENCH_EVENTS events, vs a raw indexed
 *    SELECT that also parses the envelopes;
 * 3. the cost of a page 10,000 pages deep (limit 100; less when the log is smaller) vs the first
 *    page, as a ratio (keyset pagination: should be ~1);
 * 4. the first page of a time-window-only query (`from`/`to`) over one day vs over one minute, in
 *    the middle of the log (events are one second apart): served in log order from the minute
 *    buckets, the cost should not grow with the window (target: day ≤ 1.5× minute).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import type { CloudEvent, EventFilter, NewEvent } from '../src/log/EventLog.ts';
import { SqliteEventLog } from '../src/log/sqlite.ts';
import { BenchReport, sized } from './support/report.ts';

/** Size of the log that queries run on; env BENCH_EVENTS, default 1,000,000. */
const LOG_EVENTS = Number(process.env.BENCH_EVENTS ?? sized(1_000_000, 100_000));
/** Events appended per append measurement (batches of 100), and of 1. */
const APPEND_EVENTS = sized({ batched: 50_000, single: 5_000 }, { batched: 10_000, single: 1_000 });
/** Events that share one correlation id (a command and its response events). */
const PER_CORRELATION = 5;
/** Rounds of each append measurement; the median is printed. */
const APPEND_ROUNDS = 3;
const QUERY_SAMPLES = 2_000;
const PAGE_SAMPLES = 500;
const PAGE_SIZE = 100;
const DEEP_PAGES = 10_000;
/** Page size of the time-window measurement: full for a one-minute window (60 events, one a second). */
const WINDOW_PAGE = 50;
const BUILD_BATCH = 10_000;
const TIME_BASE_MS = Date.parse('2030-01-01T00:00:00Z');

const INSERT_SQL = `INSERT OR IGNORE INTO events (id, type, source, correlationid, time_ms, backend, appended_ms, envelope)
  VALUES (?, ?, ?, ?, ?, ?, ?, ?)`;

/** The i-th event of a run: 10 types, 5 sources, 3 backends, a correlation id per PER_CORRELATION events. */
function benchEvent(run: string, i: number): NewEvent {
  const event: CloudEvent = {
    specversion: '1.0',
    id: `${run}-${i}`,
    source: `urn:bench:source-${i % 5}`,
    type: `Type${i % 10}V1`,
    datacontenttype: 'application/json',
    correlationid: `${run}-corr-${Math.floor(i / PER_CORRELATION)}`,
    time: new Date(TIME_BASE_MS + i * 1000).toISOString(),
    data: { orderId: `order-${i}`, status: 'placed', total: i % 997, lines: [{ sku: 'sku-1', qty: 2 }] },
  };
  return { backend: `backend-${i % 3}`, event };
}

/** The raw row of an event, computed as any SQLite store must (serialise, parse the time). */
function rawRow(item: NewEvent): Array<string | number> {
  const { event } = item;
  return [event.id, event.type, event.source, event.correlationid as string, Date.parse(event.time), item.backend!, Date.now(), JSON.stringify(event)];
}

function percentile(sortedMs: number[], p: number): number {
  return sortedMs[Math.min(sortedMs.length - 1, Math.floor((p / 100) * sortedMs.length))];
}

/** Runs `work` `samples` times; returns the sorted durations in ms. */
async function sample(samples: number, work: (i: number) => unknown): Promise<number[]> {
  const durations: number[] = [];
  for (let i = 0; i < samples; i++) {
    const start = performance.now();
    await work(i);
    durations.push(performance.now() - start);
  }
  return durations.sort((a, b) => a - b);
}

/** A store and a raw connection on two fresh files with the store's schema and pragmas. */
async function openPair(dir: string, name: string): Promise<{ log: SqliteEventLog; raw: DatabaseSync }> {
  const log = new SqliteEventLog(join(dir, `${name}-store.db`));
  await log.open();
  const schemaDonor = new SqliteEventLog(join(dir, `${name}-raw.db`));
  await schemaDonor.open();
  await schemaDonor.close();
  const raw = new DatabaseSync(join(dir, `${name}-raw.db`));
  raw.exec('PRAGMA synchronous = NORMAL');
  return { log, raw };
}

/** Events per second appending `total` events in batches of `batchSize`, store vs raw, on fresh files. */
async function appendRound(dir: string, round: string, total: number, batchSize: number): Promise<{ store: number; raw: number }> {
  const { log, raw } = await openPair(dir, `append-${batchSize}-${round}`);
  const batches = Array.from({ length: total / batchSize }, (_, b) =>
    Array.from({ length: batchSize }, (_, i) => benchEvent(`a${batchSize}`, b * batchSize + i)),
  );
  const storeStart = performance.now();
  for (const batch of batches) await log.append(batch);
  const storeMs = performance.now() - storeStart;

  const insert = raw.prepare(INSERT_SQL);
  const rawStart = performance.now();
  for (const batch of batches) {
    raw.exec('BEGIN IMMEDIATE');
    for (const item of batch) insert.run(...rawRow(item));
    raw.exec('COMMIT');
  }
  const rawMs = performance.now() - rawStart;
  await log.close();
  raw.close();
  return { store: (total / storeMs) * 1000, raw: (total / rawMs) * 1000 };
}

/** Median throughput of APPEND_ROUNDS rounds (store and raw alternate, so disk noise hits both). */
async function appendThroughput(dir: string, total: number, batchSize: number): Promise<{ store: number; raw: number }> {
  const rounds = [];
  for (let r = 0; r < APPEND_ROUNDS; r++) rounds.push(await appendRound(dir, String(r), total, batchSize));
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)];
  return { store: median(rounds.map((r) => r.store)), raw: median(rounds.map((r) => r.raw)) };
}

/** A store holding `total` benchmark events, appended in large batches. */
async function buildLog(dir: string, total: number): Promise<SqliteEventLog> {
  const log = new SqliteEventLog(join(dir, 'query.db'));
  await log.open();
  for (let start = 0; start < total; start += BUILD_BATCH) {
    const size = Math.min(BUILD_BATCH, total - start);
    await log.append(Array.from({ length: size }, (_, i) => benchEvent('q', start + i)));
  }
  return log;
}

function correlationLatency(log: SqliteEventLog, raw: StatementSync, total: number) {
  const correlations = Math.ceil(total / PER_CORRELATION);
  const pick = (i: number) => `q-corr-${(i * 7919) % correlations}`;
  return {
    store: () => sample(QUERY_SAMPLES, (i) => log.query({ correlationId: pick(i) }, 0, PAGE_SIZE)),
    raw: () =>
      sample(QUERY_SAMPLES, (i) =>
        raw.all(pick(i), PAGE_SIZE + 1).map((row) => JSON.parse(row.envelope as string)),
      ),
  };
}

/** p50 of one page query at `after`. */
async function pageP50(log: SqliteEventLog, filter: EventFilter, after: number): Promise<number> {
  return percentile(await sample(PAGE_SAMPLES, () => log.query(filter, after, PAGE_SIZE)), 50);
}

/** The `after` of the page `pages` pages deep for `filter` (the deepest full page in a smaller log). */
async function deepAfter(log: SqliteEventLog, filter: EventFilter, matching: number): Promise<{ after: number; pages: number }> {
  const pages = Math.max(0, Math.min(DEEP_PAGES, Math.floor(matching / PAGE_SIZE) - 1));
  // Reach the depth by walking keyset pages of 1000 (the bench measures the page there, not this walk).
  let after = 0;
  for (let skipped = 0; skipped < pages * PAGE_SIZE; ) {
    const step = Math.min(1000, pages * PAGE_SIZE - skipped);
    const page = await log.query(filter, after, step);
    after = page.events[page.events.length - 1].position;
    skipped += page.events.length;
  }
  return { after, pages };
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const ms = (n: number) => `${fmt(n * 1000, 0)} µs`;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-log-'));
  const report = new BenchReport('event-log');
  const baselineName = 'raw node:sqlite';
  try {
    console.log(`node ${process.version}, sqlite ${process.versions.sqlite}, log size ${fmt(LOG_EVENTS)} events\n`);
    console.log('append throughput (events/s)       store        raw  store/raw');
    for (const [label, total, size] of [['batches of 100', APPEND_EVENTS.batched, 100], ['batches of 1', APPEND_EVENTS.single, 1]] as const) {
      const r = await appendThroughput(dir, total, size);
      console.log(`  ${label.padEnd(30)} ${fmt(r.store).padStart(9)}  ${fmt(r.raw).padStart(9)}  ${fmt(r.store / r.raw, 2).padStart(9)}`);
      report.add({ name: `append, ${label}`, unit: 'events/s', gateway: r.store, baseline: r.raw, baselineName, better: 'higher' });
    }

    const buildStart = performance.now();
    const log = await buildLog(dir, LOG_EVENTS);
    console.log(`\nbuilt the query log in ${fmt((performance.now() - buildStart) / 1000, 1)} s`);
    const raw = new DatabaseSync(join(dir, 'query.db'), { readOnly: true });
    const rawSelect = raw.prepare('SELECT position, backend, envelope FROM events WHERE correlationid = ? ORDER BY position LIMIT ?');
    const latency = correlationLatency(log, rawSelect, LOG_EVENTS);
    await latency.store(); // warm-up of the page cache for both
    const [store, baseline] = [await latency.store(), await latency.raw()];
    console.log('\nquery({ correlationId }) latency      p50        p99');
    console.log(`  store                          ${ms(percentile(store, 50)).padStart(9)}  ${ms(percentile(store, 99)).padStart(9)}`);
    console.log(`  raw indexed SELECT + parse     ${ms(percentile(baseline, 50)).padStart(9)}  ${ms(percentile(baseline, 99)).padStart(9)}`);
    console.log(`  store/raw (p50)                ${fmt(percentile(store, 50) / percentile(baseline, 50), 2).padStart(9)}`);
    for (const p of [50, 99]) {
      report.add({ name: `query by correlationId p${p}`, unit: 'ms', gateway: percentile(store, p), baseline: percentile(baseline, p), baselineName, better: 'lower' });
    }

    console.log(`\npage cost (limit ${PAGE_SIZE}, p50)          first page   deep page  deep/first`);
    for (const [label, filter, matching] of [['no filter', {}, LOG_EVENTS], ['type filter', { type: 'Type3V1' }, LOG_EVENTS / 10]] as const) {
      const deep = await deepAfter(log, filter, matching);
      const [first, deepCost] = [await pageP50(log, filter, 0), await pageP50(log, filter, deep.after)];
      console.log(`  ${`${label}, ${fmt(deep.pages)} pages deep`.padEnd(34)} ${ms(first).padStart(9)}  ${ms(deepCost).padStart(9)}  ${fmt(deepCost / first, 2).padStart(9)}`);
      // The baseline of a deep page is the first page of the same store: keyset pagination keeps them equal.
      report.add({ name: `page ${deep.pages} deep, ${label} p50`, unit: 'ms', gateway: deepCost, baseline: first, baselineName: 'first page', better: 'lower' });
    }
    const middle = TIME_BASE_MS + Math.floor(LOG_EVENTS / 2) * 1000;
    const windows = { minute: { fromMs: middle, toMs: middle + 60_000 - 1 }, day: { fromMs: middle, toMs: middle + 86_400_000 - 1 } };
    // Pages of WINDOW_PAGE events: both windows fill it (a minute holds 60), so only the window's size differs.
    const windowPage = (filter: EventFilter) => sample(PAGE_SAMPLES, () => log.query(filter, 0, WINDOW_PAGE)).then((d) => percentile(d, 50));
    await windowPage(windows.day); // warm-up
    const [minuteCost, dayCost] = [await windowPage(windows.minute), await windowPage(windows.day)];
    console.log(`\ntime-window-only first page of ${WINDOW_PAGE} (p50)  one minute    one day   day/minute`);
    console.log(`  from/to, no other filter          ${ms(minuteCost).padStart(9)}  ${ms(dayCost).padStart(9)}  ${fmt(dayCost / minuteCost, 2).padStart(9)}`);
    report.add({ name: 'time window first page, one day vs one minute, p50', unit: 'ms', gateway: dayCost, baseline: minuteCost, baselineName: 'one-minute window', better: 'lower' });
    raw.close();
    await log.close();
    report.write({ logEvents: LOG_EVENTS, sqlite: process.versions.sqlite });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
