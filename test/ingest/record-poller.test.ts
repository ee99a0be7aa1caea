import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { RecordsConfig } from '../../src/config/types.ts';
import { compareCursors } from '../../src/ingest/record-cursor.ts';
import { recordsCheckpointKey, RecordPoller } from '../../src/ingest/record-poller.ts';
import type { MemoryEventLog } from '../../src/log/memory.ts';
import type { IngestMetrics } from '../../src/metrics/ingest.ts';
import { counterValue, newMetrics, openLog, sendJson, silentLogger, startServer, waitFor, type TestServer } from './support.ts';

interface OrderRecord {
  id: string;
  status?: string;
  updatedAt: string;
}

const records: RecordsConfig = {
  path: '/orders',
  intervalMs: 20,
  types: ['OrderCreatedV1', 'OrderShippedV1'],
  cursor: { param: 'updatedSince', field: 'updatedAt' },
  items: 'items',
  event: { type: 'Order{$pascal(status)}V1', id: '{id}:{updatedAt}', time: 'updatedAt', data: "{ 'orderId': id, 'status': status }" },
};

/** A legacy orders service: `updatedSince` is inclusive, as many real ones are. */
function ordersHandler(rows: OrderRecord[]) {
  return (_req: unknown, res: ServerResponse, url: URL) => {
    const since = url.searchParams.get('updatedSince');
    const items = since === null ? rows : rows.filter((r) => Date.parse(r.updatedAt) >= Date.parse(since));
    sendJson(res, 200, { items });
  };
}

let server: TestServer;
let log: MemoryEventLog;
let metrics: IngestMetrics;
let poller: RecordPoller;

async function setup(handler: Parameters<typeof startServer>[0], config: RecordsConfig = records, maxEventBytes?: number): Promise<void> {
  server = await startServer(handler);
  log = await openLog();
  metrics = newMetrics();
  poller = new RecordPoller({
    backend: { id: 'orders', url: server.url, headers: { authorization: 'Bearer t0k' }, source: 'urn:acme:orders' },
    records: config,
    publicUrl: 'http://gw.test/',
    log,
    logger: silentLogger(),
    metrics,
    maxBackoffMs: 60,
    maxEventBytes,
  });
}

afterEach(async () => {
  await poller?.close();
  await server?.close();
  await log?.close();
});

describe('RecordPoller', () => {
  it('maps records into the log and adds nothing when re-polled', async () => {
    const rows = [
      { id: 'o-1', status: 'created', updatedAt: '2024-05-01T10:00:00Z' },
      { id: 'o-2', status: 'shipped', updatedAt: '2024-05-01T10:05:00Z' },
    ];
    await setup(ordersHandler(rows), { ...records, cursor: undefined });
    await poller.pollOnce();
    await poller.pollOnce();
    expect(await log.count()).toBe(2);
    const { events } = await log.query({}, 0, 10);
    expect(events.map((e) => [e.backend, e.event.type, e.event.source])).toEqual([
      ['orders', 'OrderCreatedV1', 'urn:acme:orders'],
      ['orders', 'OrderShippedV1', 'urn:acme:orders'],
    ]);
    expect(server.requests.map((r) => r.url.search)).toEqual(['', '']);
    expect(server.requests[0].headers.authorization).toBe('Bearer t0k');
    expect(await counterValue(metrics.duplicates, { backend: 'orders' })).toBe(2);
    expect(await counterValue(metrics.ingested, { backend: 'orders', type: 'OrderCreatedV1' })).toBe(1);
    const lag = (await metrics.lag.get()).values.find((v) => v.labels.backend === 'orders');
    expect(lag?.value).toBeGreaterThanOrEqual(0);
    expect(lag?.value).toBeLessThan(60);
  });

  it('advances the checkpoint to the highest cursor value and sends it as the query parameter', async () => {
    const rows = [
      { id: 'o-2', status: 'shipped', updatedAt: '2024-05-01T10:05:00Z' },
      { id: 'o-1', status: 'created', updatedAt: '2024-05-01T10:00:00Z' },
    ];
    await setup(ordersHandler(rows));
    await poller.pollOnce();
    expect(await log.checkpoint(recordsCheckpointKey('orders', '/orders'))).toBe('2024-05-01T10:05:00Z');
    rows.push({ id: 'o-3', status: 'created', updatedAt: '2024-05-01T11:00:00Z' });
    await poller.pollOnce();
    expect(server.requests[0].url.searchParams.has('updatedSince')).toBe(false);
    expect(server.requests[1].url.searchParams.get('updatedSince')).toBe('2024-05-01T10:05:00Z');
    expect(await log.checkpoint('records:orders:/orders')).toBe('2024-05-01T11:00:00Z');
    expect(await log.count()).toBe(3);
  });

  it('re-reads the boundary inclusively: a new record at the checkpoint time is kept, the old one dropped', async () => {
    const rows = [{ id: 'o-1', status: 'created', updatedAt: '2024-05-01T10:00:00Z' }];
    await setup(ordersHandler(rows));
    await poller.pollOnce();
    rows.push({ id: 'o-2', status: 'created', updatedAt: '2024-05-01T10:00:00.000Z' });
    await poller.pollOnce();
    expect(await log.count()).toBe(2);
    expect(await counterValue(metrics.duplicates, { backend: 'orders' })).toBe(1);
    // Same instant written differently: the checkpoint keeps the first spelling.
    expect(await log.checkpoint('records:orders:/orders')).toBe('2024-05-01T10:00:00Z');
  });

  it('skips a record that does not map, ingests the rest and still moves the cursor past it', async () => {
    const rows = [
      { id: 'o-1', status: 'created', updatedAt: '2024-05-01T10:00:00Z' },
      { id: 'o-2', updatedAt: '2024-05-01T10:01:00Z' },
      { id: 'o-3', status: 'shipped', updatedAt: '2024-05-01T10:02:00Z' },
    ];
    await setup(ordersHandler(rows));
    await poller.pollOnce();
    expect(await log.count()).toBe(2);
    expect(await counterValue(metrics.mappingFailures, { backend: 'orders' })).toBe(1);
    expect(await log.checkpoint('records:orders:/orders')).toBe('2024-05-01T10:02:00Z');
  });

  it('refuses a mapped event over events.maxEventBytes (counted, never stored), ingests the rest and moves the cursor past it', async () => {
    const rows = [
      { id: 'o-1', status: 'created', updatedAt: '2024-05-01T10:00:00Z', note: 'short' },
      { id: 'o-2', status: 'created', updatedAt: '2024-05-01T10:01:00Z', note: 'x'.repeat(4096) },
      { id: 'o-3', status: 'shipped', updatedAt: '2024-05-01T10:02:00Z', note: 'short' },
    ];
    const withNote = { ...records, event: { ...records.event, data: "{ 'orderId': id, 'note': note }" } };
    await setup(ordersHandler(rows as OrderRecord[]), withNote, 2048);
    await poller.pollOnce();
    expect((await log.query({}, 0, 10)).events.map((e) => (e.event.data as { orderId: string }).orderId)).toEqual(['o-1', 'o-3']);
    expect(await counterValue(metrics.tooLarge, { backend: 'orders' })).toBe(1);
    expect(await log.checkpoint('records:orders:/orders')).toBe('2024-05-01T10:02:00Z');
  });

  it('keeps polling through backend errors with backoff and recovers', async () => {
    const rows = [{ id: 'o-1', status: 'created', updatedAt: '2024-05-01T10:00:00Z' }];
    let failures = 3;
    const healthy = ordersHandler(rows);
    await setup((req, res, url) => {
      if (failures-- > 0) return sendJson(res, 503, { error: 'down' });
      healthy(req, res, url);
    });
    poller.start();
    poller.start();
    await waitFor(async () => (await log.count()) === 1);
    expect(await counterValue(metrics.errors, { backend: 'orders' })).toBe(3);
    await poller.close();
    await poller.close();
  });

  it('counts a response that is not JSON as an error, not as mapping failures', async () => {
    await setup((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>'));
    await expect(poller.pollOnce()).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    expect(await log.count()).toBe(0);
  });

  it('stops on pause and polls again on resume', async () => {
    const rows = [{ id: 'o-1', status: 'created', updatedAt: '2024-05-01T10:00:00Z' }];
    await setup(ordersHandler(rows));
    poller.start();
    await waitFor(async () => (await log.count()) === 1);
    poller.pause();
    rows.push({ id: 'o-2', status: 'created', updatedAt: '2024-05-01T10:30:00Z' });
    const seen = server.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.requests.length).toBeLessThanOrEqual(seen + 1);
    expect(await log.count()).toBeLessThanOrEqual(2);
    poller.resume();
    await waitFor(async () => (await log.count()) === 2);
  });
});

describe('compareCursors', () => {
  it('orders numbers numerically, dates as instants, other text by code units', () => {
    expect(compareCursors('9', '10')).toBeLessThan(0);
    expect(compareCursors('2024-05-01T12:00:00+02:00', '2024-05-01T11:00:00Z')).toBeLessThan(0);
    expect(compareCursors('2024-05-01T10:00:00Z', '2024-05-01T10:00:00.000Z')).toBe(0);
    expect(compareCursors('abc', 'abd')).toBeLessThan(0);
  });
});
