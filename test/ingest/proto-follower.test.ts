import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService, type PaymentsService } from '../../examples/payments-service.ts';
import { followCheckpointKey, POLL_BATCH_EVENTS, ProtoFollower, type ProtoFollowerOptions } from '../../src/ingest/proto-follower.ts';
import type { CloudEvent } from '../../src/log/EventLog.ts';
import type { MemoryEventLog } from '../../src/log/memory.ts';
import type { IngestMetrics } from '../../src/metrics/ingest.ts';
import { counterValue, newMetrics, openLog, sendJson, silentLogger, startServer, waitFor, type TestServer } from './support.ts';

/**
 * A protocol backend written for these tests: `GET /events` with index cursors (or, with
 * `cursors: false`, only `from`), `GET /events/stream` without replay, so anything the follower
 * gets after a drop can only have come from its catch-up poll.
 */
interface FakeBackend {
  server: TestServer;
  events: CloudEvent[];
  streams: Set<ServerResponse>;
  /** false: the stream answers 503. */
  streamsOpen: boolean;
  emit(count?: number): CloudEvent[];
  eventRequests(): URL[];
  streamRequests(): { url: URL; headers: Record<string, unknown> }[];
}

async function startBackend(options: { cursors: boolean }): Promise<FakeBackend> {
  const backend = { events: [] as CloudEvent[], streams: new Set<ServerResponse>(), streamsOpen: true } as FakeBackend;
  backend.server = await startServer((_req, res, url) => {
    if (url.pathname === '/events') return sendJson(res, 200, listEvents(backend.events, url, options.cursors));
    if (url.pathname !== '/events/stream') return sendJson(res, 404, {});
    if (!backend.streamsOpen) return sendJson(res, 503, {});
    res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': connected\n\n');
    backend.streams.add(res);
    res.on('close', () => backend.streams.delete(res));
  });
  backend.emit = (count = 1) => {
    const added: CloudEvent[] = [];
    for (let i = 0; i < count; i++) {
      const event = makeEvent(backend.server.url, backend.events.length + 1);
      added.push(event);
      backend.events.push(event);
      for (const stream of backend.streams) stream.write(`id: ${event.id}\r\ndata: ${JSON.stringify(event)}\r\n\r\n`);
    }
    return added;
  };
  backend.eventRequests = () => backend.server.requests.filter((r) => r.url.pathname === '/events').map((r) => r.url);
  backend.streamRequests = () => backend.server.requests.filter((r) => r.url.pathname === '/events/stream');
  return backend;
}

function listEvents(events: CloudEvent[], url: URL, cursors: boolean): { events: CloudEvent[]; nextCursor?: string } {
  const limit = Number(url.searchParams.get('limit') ?? 50);
  if (!cursors) {
    const from = url.searchParams.get('from');
    const matching = from === null ? events : events.filter((e) => Date.parse(e.time) >= Date.parse(from));
    return { events: matching.slice(0, limit) };
  }
  const start = Number(url.searchParams.get('after') ?? 0);
  const end = start + limit;
  return end < events.length ? { events: events.slice(start, end), nextCursor: String(end) } : { events: events.slice(start) };
}

function makeEvent(baseUrl: string, n: number): CloudEvent {
  return {
    specversion: '1.0',
    id: `evt-${n}`,
    source: `${baseUrl}/`,
    type: 'PaymentAuthorizedV1',
    datacontenttype: 'application/json',
    dataschema: `${baseUrl}/events/payment-authorized/1`,
    time: new Date(Date.UTC(2024, 4, 1, 10, 0, n)).toISOString(),
    data: { n },
  };
}

let backend: FakeBackend | undefined;
let payments: PaymentsService | undefined;
let log: MemoryEventLog;
let metrics: IngestMetrics;
const followers: ProtoFollower[] = [];

function follower(endpoint: string, overrides: Partial<ProtoFollowerOptions> = {}): ProtoFollower {
  const created = new ProtoFollower({
    backendId: 'payments',
    endpoint: () => endpoint,
    log,
    mode: 'poll',
    intervalMs: 20,
    headers: { 'x-api-key': 'k1' },
    rewrite: (event) => event,
    logger: silentLogger(),
    metrics,
    pageLimit: 3,
    maxBackoffMs: 60,
    ...overrides,
  });
  followers.push(created);
  return created;
}

async function storedIds(): Promise<string[]> {
  return (await log.query({}, 0, 1000)).events.map((e) => e.event.id);
}

afterEach(async () => {
  await Promise.all(followers.splice(0).map((f) => f.close()));
  await backend?.server.close();
  await payments?.close();
  backend = payments = undefined;
  await log?.close();
});

describe('ProtoFollower, poll mode', () => {
  it('follows nextCursor across pages and appends every event once', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    backend.emit(7);
    expect(await follower(`${backend.server.url}/`).pollOnce()).toBe(true);
    expect(await storedIds()).toEqual(backend.events.map((e) => e.id));
    expect(backend.eventRequests().map((u) => [u.searchParams.get('after'), u.searchParams.get('limit')])).toEqual([
      [null, '3'],
      ['3', '3'],
      ['6', '3'],
    ]);
    expect(backend.server.requests[0].headers['x-api-key']).toBe('k1');
    expect(JSON.parse((await log.checkpoint(followCheckpointKey('payments')))!)).toMatchObject({ cursor: '6' });
    expect(await counterValue(metrics.ingested, { backend: 'payments', type: 'PaymentAuthorizedV1' })).toBe(7);
  });

  it('appends the pages of one poll together: one append with the last page\'s checkpoint (issue 29)', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    backend.emit(7);
    const appends: Array<{ ids: string[]; checkpoint?: string }> = [];
    const append = log.append.bind(log);
    log.append = (items, checkpoint) => {
      appends.push({ ids: items.map((i) => i.event.id), checkpoint: checkpoint?.value });
      return append(items, checkpoint);
    };
    expect(await follower(`${backend.server.url}/`).pollOnce()).toBe(true);
    expect(backend.eventRequests()).toHaveLength(3);
    expect(appends).toEqual([{ ids: backend.events.map((e) => e.id), checkpoint: expect.stringContaining('"cursor":"6"') }]);
    expect(await storedIds()).toEqual(backend.events.map((e) => e.id));
  });

  it(`appends a long poll in batches of ${POLL_BATCH_EVENTS} events, in order, each event once`, async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    backend.emit(POLL_BATCH_EVENTS * 2 + 50);
    const sizes: number[] = [];
    const append = log.append.bind(log);
    log.append = (items, checkpoint) => {
      sizes.push(items.length);
      return append(items, checkpoint);
    };
    expect(await follower(`${backend.server.url}/`, { pageLimit: 100 }).pollOnce()).toBe(true);
    expect(sizes).toEqual([POLL_BATCH_EVENTS, POLL_BATCH_EVENTS, 50]);
    expect((await log.query({}, 0, 5000)).events.map((e) => e.event.id)).toEqual(backend.events.map((e) => e.id));
  });

  it('keeps the pages read before a failure in the middle of a poll, and the next poll goes on from them', async () => {
    const events = Array.from({ length: 8 }, (_, i) => makeEvent('http://source.test', i + 1));
    let failures = 1;
    const server = await startServer((_req, res, url) => {
      if (url.searchParams.get('after') === '6' && failures-- > 0) return sendJson(res, 503, { error: { code: 'BACKEND_UNAVAILABLE', message: 'later' } });
      sendJson(res, 200, listEvents(events, url, true));
    });
    backend = { server } as FakeBackend;
    log = await openLog();
    metrics = newMetrics();
    const poller = follower(`${server.url}/`);
    await expect(poller.pollOnce()).rejects.toThrow();
    expect(await storedIds()).toEqual(events.slice(0, 6).map((e) => e.id));
    expect(JSON.parse((await log.checkpoint(followCheckpointKey('payments')))!)).toMatchObject({ cursor: '6' });
    expect(await poller.pollOnce()).toBe(true);
    expect(await storedIds()).toEqual(events.map((e) => e.id));
    expect(await counterValue(metrics.duplicates, { backend: 'payments' })).toBe(0);
  });

  it('resumes a fresh follower on the same log from the last cursor given, doubling nothing', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    backend.emit(7);
    const first = follower(`${backend.server.url}/`);
    await first.pollOnce();
    await first.close();
    backend.emit(2);
    await follower(backend.server.url).pollOnce();
    expect(backend.eventRequests().at(3)?.searchParams.get('after')).toBe('6');
    expect(await storedIds()).toEqual(backend.events.map((e) => e.id));
    expect(await counterValue(metrics.duplicates, { backend: 'payments' })).toBe(1);
  });

  it('resumes a backend that gives no cursor by from=<newest time>, inclusive', async () => {
    backend = await startBackend({ cursors: false });
    log = await openLog();
    metrics = newMetrics();
    backend.emit(2);
    const poller = follower(`${backend.server.url}/`, { pageLimit: 100 });
    await poller.pollOnce();
    backend.emit(2);
    await poller.pollOnce();
    expect(backend.eventRequests().map((u) => u.searchParams.get('from'))).toEqual([null, backend.events[1].time]);
    expect(await storedIds()).toEqual(['evt-1', 'evt-2', 'evt-3', 'evt-4']);
    expect(await counterValue(metrics.duplicates, { backend: 'payments' })).toBe(1);
  });

  it('skips a malformed event, counts it and ingests the rest', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    const [, bad] = backend.emit(3);
    bad.type = 'payment-authorized';
    await follower(backend.server.url).pollOnce();
    expect(await storedIds()).toEqual(['evt-1', 'evt-3']);
    expect(await counterValue(metrics.malformed, { backend: 'payments' })).toBe(1);
  });

  it('refuses a page event over events.maxEventBytes once (counted, never stored), ingests the rest and moves past it', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    const [, big] = backend.emit(3);
    big.data = { blob: 'x'.repeat(4096) };
    const f = follower(backend.server.url, { maxEventBytes: 2048 });
    await f.pollOnce();
    expect(await storedIds()).toEqual(['evt-1', 'evt-3']);
    expect(await counterValue(metrics.tooLarge, { backend: 'payments' })).toBe(1);
    backend.emit(1);
    await f.pollOnce();
    expect(await storedIds()).toEqual(['evt-1', 'evt-3', 'evt-4']);
  });

  it('stores events as received except for the rewrite of source and dataschema', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    const [original] = backend.emit(1);
    const internal = `${backend.server.url}/`;
    const rewrite = (event: CloudEvent): CloudEvent => ({
      ...event,
      source: event.source.replace(internal, 'https://gw.test/services/payments/'),
      dataschema: event.dataschema?.replace(internal, 'https://gw.test/services/payments/'),
    });
    await follower(internal, { rewrite }).pollOnce();
    const [stored] = (await log.query({}, 0, 10)).events;
    expect(stored.backend).toBe('payments');
    expect(stored.event).toEqual({
      ...original,
      source: 'https://gw.test/services/payments/',
      dataschema: 'https://gw.test/services/payments/events/payment-authorized/1',
    });
  });

  it('polls on its interval after start(), backs off on errors, and stops on close()', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    const running = follower(backend.server.url);
    running.start();
    backend.emit(2);
    await waitFor(async () => (await log.count()) === 2);
    await backend.server.close();
    await waitFor(async () => (await counterValue(metrics.errors, { backend: 'payments' })) >= 2);
    await running.close();
    await running.close();
  });
});

describe('ProtoFollower, stream mode', () => {
  it('remembers its latest failure without the backend address, and forgets it once it reads again', async () => {
    backend = await startBackend({ cursors: true });
    backend.streamsOpen = false;
    log = await openLog();
    const streaming = follower(backend.server.url, { mode: 'stream' });
    expect(streaming.lastError).toBeUndefined();
    streaming.start();
    await waitFor(() => streaming.lastError !== undefined);
    expect(streaming.lastError).toBe('GET /events/stream answered 503 application/json');
    backend.streamsOpen = true;
    await waitFor(() => streaming.lastError === undefined);
  });

  it('reads events from SSE and catches up by polling what a dropped stream missed', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    backend.emit(2);
    follower(`${backend.server.url}/`, { mode: 'stream' }).start();
    await waitFor(async () => backend!.streams.size === 1 && (await log.count()) === 2);

    const pollsBefore = backend.eventRequests().length;
    const live = backend.emit(2);
    await waitFor(async () => (await log.count()) === 4);
    expect(backend.eventRequests()).toHaveLength(pollsBefore); // they came over the stream

    backend.streamsOpen = false;
    for (const stream of backend.streams) stream.destroy();
    const refusedBefore = backend.streamRequests().length;
    backend.emit(2); // produced while no stream is open; the fake backend never replays
    await waitFor(() => backend!.streamRequests().length > refusedBefore);
    backend.streamsOpen = true;
    await waitFor(async () => (await log.count()) === 6);
    expect(await storedIds()).toEqual(backend.events.map((e) => e.id));
    expect(backend.streamRequests().at(-1)?.headers['last-event-id']).toBe(live[1].id);
    expect(backend.streamRequests().at(-1)?.headers.accept).toBe('text/event-stream');
  });

  it('appends what the stream brought while an append was in progress in one append, in order (issue 29)', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    const sizes: number[] = [];
    let hold: Promise<void> | undefined;
    const append = log.append.bind(log);
    log.append = async (items, checkpoint) => {
      sizes.push(items.length);
      await hold;
      return append(items, checkpoint);
    };
    follower(`${backend.server.url}/`, { mode: 'stream' }).start();
    await waitFor(() => backend!.streams.size === 1);
    await new Promise((resolve) => setTimeout(resolve, 100)); // the catch-up poll is done
    let release!: () => void;
    hold = new Promise<void>((resolve) => (release = resolve));
    backend.emit(1);
    await waitFor(() => sizes.length === 1);
    for (let i = 0; i < 20; i++) {
      backend.emit(1); // twenty separate writes while the first append is held
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    hold = undefined;
    release();
    await waitFor(async () => (await log.count()) === 21);
    expect(sizes).toEqual([1, 20]);
    expect(await storedIds()).toEqual(backend.events.map((e) => e.id));
  });

  it('skips a stream event over events.maxEventBytes without dropping the stream: counted once as too large, its id passed, the next events follow', async () => {
    backend = await startBackend({ cursors: true });
    log = await openLog();
    metrics = newMetrics();
    follower(backend.server.url, { mode: 'stream', maxEventBytes: 1024 }).start();
    await waitFor(() => backend!.streams.size === 1);
    const first = backend.streamRequests().length;
    for (const stream of backend.streams) stream.write(`id: huge\ndata: ${'x'.repeat(2048)}\n\n`);
    const [next] = backend.emit(1);
    await waitFor(async () => (await log.count()) === 1);
    expect(await storedIds()).toEqual([next.id]);
    expect(await counterValue(metrics.tooLarge, { backend: 'payments' })).toBe(1);
    expect(await counterValue(metrics.errors, { backend: 'payments' })).toBe(0);
    expect(backend.streamRequests()).toHaveLength(first);
  });

  it('follows the example payments service, rewriting its address out of source and dataschema', async () => {
    payments = await startPaymentsService({ port: 0 });
    log = await openLog();
    metrics = newMetrics();
    const service = payments;
    const rewrite = (event: CloudEvent): CloudEvent => ({
      ...event,
      source: event.source.replace(service.endpoint, 'https://gw.test/services/payments/'),
      ...(event.dataschema && { dataschema: event.dataschema.replace(service.endpoint, 'https://gw.test/services/payments/') }),
    });
    service.emit('PaymentAuthorizedV1', { orderId: 'o-1', amount: 5, currency: 'EUR' });
    follower(service.endpoint, { mode: 'stream', rewrite }).start();
    await waitFor(async () => (await log.count()) === 1);
    service.emit('PaymentRefundedV1', { orderId: 'o-1', amount: 5, currency: 'EUR' }, 'cmd-7');
    await waitFor(async () => (await log.count()) === 2);
    const stored = (await log.query({}, 0, 10)).events.map((e) => e.event);
    expect(stored.map((e) => e.type)).toEqual(['PaymentAuthorizedV1', 'PaymentRefundedV1']);
    expect(stored[1].correlationid).toBe('cmd-7');
    for (const event of stored) {
      expect(event.source).toBe('https://gw.test/services/payments/');
      expect(event.dataschema ?? '').not.toContain(service.url);
    }
  });
});
