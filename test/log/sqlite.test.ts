import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteEventLog, selectPageSql, TIME_WINDOW_PAGE_SQL } from '../../src/log/sqlite.ts';
import type { EventFilter } from '../../src/log/EventLog.ts';
import { eventLogContract } from './contract.ts';
import { cloudEvent } from './fixtures/cloud-event.ts';

const root = mkdtempSync(join(tmpdir(), 'pgw-sqlite-log-'));
let files = 0;

/** A fresh database path in a directory that does not exist yet (open() creates it). */
function freshPath(): string {
  files += 1;
  return join(root, `case-${files}`, 'data', 'gateway.db');
}

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

eventLogContract('sqlite (file)', () => new SqliteEventLog(freshPath()));
eventLogContract('sqlite (:memory:)', () => new SqliteEventLog(':memory:'));

describe('SqliteEventLog', () => {
  let path: string;
  let log: SqliteEventLog;

  beforeEach(async () => {
    path = freshPath();
    log = new SqliteEventLog(path);
    await log.open();
  });

  afterEach(async () => {
    await log.close();
  });

  it('keeps events, positions and checkpoints across a restart', async () => {
    const { appended } = await log.append(
      [{ backend: 'orders', event: cloudEvent('a', { correlationid: 'k' }) }, { event: cloudEvent('b') }],
      { key: 'poll:orders', value: 'v1' },
    );
    await log.close();

    log = new SqliteEventLog(path);
    await log.open();
    expect((await log.query({}, 0, 10)).events).toEqual(appended);
    expect(await log.checkpoint('poll:orders')).toBe('v1');
    expect(await log.count()).toBe(2);
    expect(await log.head()).toBe(appended[1].position);
    expect((await log.append([{ event: cloudEvent('a') }])).duplicates).toBe(1);
    const next = await log.append([{ event: cloudEvent('c') }]);
    expect(next.appended[0].position).toBeGreaterThan(appended[1].position);
  });

  it('opens twice without effect and refuses work when closed', async () => {
    await log.open();
    await log.close();
    await expect(log.count()).rejects.toThrow(/not open/);
    await log.open();
    expect(await log.count()).toBe(0);
  });

  it('runs in WAL mode', () => {
    const db = new DatabaseSync(path);
    try {
      expect(db.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    } finally {
      db.close();
    }
  });

  describe('query plans', () => {
    const plan = (filter: EventFilter): string => {
      const db = new DatabaseSync(path);
      try {
        const args = [0, ...Object.values(filter), 101];
        const rows = db.prepare(`EXPLAIN QUERY PLAN ${selectPageSql(filter)}`).all(...(args as number[]));
        return rows.map((row) => String(row.detail)).join('\n');
      } finally {
        db.close();
      }
    };

    it('uses the correlation id index for a correlationId query', () => {
      const detail = plan({ correlationId: 'k' });
      expect(detail).toMatch(/SEARCH events USING (COVERING )?INDEX events_correlationid/);
      expect(detail).not.toMatch(/TEMP B-TREE/);
    });

    it('seeks by position for a deep page, with or without a filter', () => {
      expect(plan({})).toMatch(/SEARCH events USING INTEGER PRIMARY KEY \(rowid>\?\)/);
      for (const filter of [{ type: 'T' }, { source: 's' }, { backend: 'b' }] as EventFilter[]) {
        const detail = plan(filter);
        expect(detail).toMatch(/SEARCH events USING INDEX events_\w+ \(\w+=\? AND (rowid|position)>\?\)/);
        expect(detail).not.toMatch(/SCAN events|TEMP B-TREE/);
      }
    });
  });

  describe('time-window-only queries (from/to, no other filter)', () => {
    it('read in log order from the rowid, never sorting the window through the time index', () => {
      const db = new DatabaseSync(path);
      try {
        const detail = db.prepare(`EXPLAIN QUERY PLAN ${TIME_WINDOW_PAGE_SQL}`).all(0, 10, 0, 1, 101).map((row) => String(row.detail)).join('\n');
        expect(detail).toMatch(/SEARCH events USING INTEGER PRIMARY KEY \(rowid>\? AND rowid<\?\)/);
        expect(detail).not.toMatch(/TEMP B-TREE|events_time/);
      } finally {
        db.close();
      }
    });

    it('find every event of the window in log order, with event times out of log order, across pages', async () => {
      // Minutes 5, 1, 3, 1, 9, 2, 3: the window [1, 3] holds the 2nd, 3rd, 4th, 6th and 7th events.
      const minutes = [5, 1, 3, 1, 9, 2, 3];
      const { appended } = await log.append(minutes.map((minute, i) => ({ event: cloudEvent(`w-${i}`, {}, minute) })));
      const window = { fromMs: Date.parse(cloudEvent('x', {}, 1).time as string), toMs: Date.parse(cloudEvent('x', {}, 3).time as string) + 59_999 };
      const expected = appended.filter((_, i) => minutes[i] >= 1 && minutes[i] <= 3);
      const first = await log.query(window, 0, 3);
      const second = await log.query(window, first.next!, 3);
      expect([...first.events, ...second.events]).toEqual(expected);
      expect(second.next).toBeUndefined();
      expect((await log.query({ fromMs: window.fromMs + 3 * 60_000 }, 0, 10)).events.map((e) => e.event.id)).toEqual(['w-0', 'w-4']);
      expect((await log.query({ toMs: window.fromMs - 1 }, 0, 10)).events).toEqual([]);
    });

    it('find the events of a window spanning whole hours (read by the hour) and partial ones (by the minute)', async () => {
      const minutes = [10, 200, 130, 500, 61, 400, 59];
      const { appended } = await log.append(minutes.map((minute, i) => ({ event: cloudEvent(`h-${i}`, {}, minute) })));
      const at = (minute: number) => Date.parse(cloudEvent('x', {}, minute).time as string);
      const page = await log.query({ fromMs: at(60), toMs: at(400) + 59_999 }, 0, 10);
      expect(page.events).toEqual(appended.filter((_, i) => minutes[i] >= 60 && minutes[i] <= 400));
    });

    it('work on a log written before the time buckets existed (filled once at open)', async () => {
      await log.append([0, 4, 2].map((minute, i) => ({ event: cloudEvent(`old-${i}`, {}, minute) })));
      await log.close();
      const db = new DatabaseSync(path);
      db.exec('DELETE FROM event_time_buckets');
      db.close();
      log = new SqliteEventLog(path);
      await log.open();
      const from = Date.parse(cloudEvent('x', {}, 2).time as string);
      expect((await log.query({ fromMs: from }, 0, 10)).events.map((e) => e.event.id)).toEqual(['old-1', 'old-2']);
    });
  });

  it('prunes in batches larger than one transaction', async () => {
    const batch = Array.from({ length: 12_000 }, (_, i) => ({ event: cloudEvent(`bulk-${i}`) }));
    await log.append(batch);
    expect((await log.prune({ maxEvents: 500, maxAgeMs: 0 })).removed).toBe(11_500);
    expect(await log.count()).toBe(500);
    expect(await log.positionOf('bulk-11499')).toBeUndefined();
    expect(await log.positionOf('bulk-11500')).toBeDefined();
    expect((await log.prune({ maxEvents: 0, maxAgeMs: 1 }, Date.now() + 1000)).removed).toBe(500);
  });

  it('keeps every acknowledged append across a SIGKILL', async () => {
    await log.close();
    const acknowledged = await runUntilKilled(path, 300);
    expect(acknowledged.length).toBeGreaterThanOrEqual(300);

    log = new SqliteEventLog(path);
    await log.open();
    const stored = (await readEverything(log)).map((event) => event.event.id);
    expect(new Set(stored).size).toBe(stored.length);
    expect(stored.slice(0, acknowledged.length)).toEqual(acknowledged);
    // The checkpoint names the last committed batch, and exactly its batches are in the log.
    const lastBatch = Number(await log.checkpoint('crash'));
    expect(stored).toHaveLength((lastBatch + 1) * 10);
    expect(await log.count()).toBe(stored.length);

    const db = new DatabaseSync(path);
    expect(db.prepare('PRAGMA integrity_check').get()).toEqual({ integrity_check: 'ok' });
    db.close();
  });
});

/** Every event of the log, page by page. */
async function readEverything(log: SqliteEventLog) {
  const events = [];
  for (let after = 0; ; ) {
    const page = await log.query({}, after, 1000);
    events.push(...page.events);
    if (page.next === undefined) return events;
    after = page.next;
  }
}

/**
 * Starts the appending child on `path`, SIGKILLs it once it acknowledged at least `minimum` ids, and
 * resolves with every id it acknowledged (complete lines only).
 */
function runUntilKilled(path: string, minimum: number): Promise<string[]> {
  const script = new URL('./fixtures/append-until-killed.ts', import.meta.url).pathname;
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', script, path], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let errors = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    output += chunk;
    if (output.split('\n').length > minimum) child.kill('SIGKILL');
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (errors += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL') reject(new Error(`child ended with ${code}: ${errors}`));
      else resolve(output.split('\n').slice(0, -1));
    });
  });
}
