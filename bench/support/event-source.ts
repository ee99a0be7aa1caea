/**
 * A minimal protocol backend that produces events on demand, for the webhook benchmark, run as its
 * own process: `node bench/support/event-source.ts` prints `{"url": ...}` once listening.
 * `POST /__release?count=N` produces N events at once (each carries `data.sentMs`, the epoch ms of
 * its release, for end-to-end latency); they are pushed on every open `GET /events/stream` (SSE,
 * `id` = position) and served by `GET /events?after=<position>&limit=<n>` pages with `nextCursor`.
 * `GET /__stats` → `{ streams, events }` (open streams, events produced).
 */
import { createServer, type ServerResponse } from 'node:http';

const events: string[] = [];
const streams = new Set<ServerResponse>();
const run = Date.now().toString(36);

/** One event: an order of a few fields, like the bodies of `bench/webhooks.bench.ts`. */
function produce(i: number, sentMs: number): string {
  return JSON.stringify({
    specversion: '1.0', id: `${run}-${i}`, source: 'urn:bench:orders', type: 'OrderPlacedV1', datacontenttype: 'application/json',
    time: new Date(sentMs).toISOString(), data: { orderId: `o-${i}`, sku: 'ABC-123', qty: 1 + (i % 5), total: 42.5, sentMs },
  });
}

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://source');
  const json = (status: number, value: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(typeof value === 'string' ? value : JSON.stringify(value));
  };
  req.resume();
  if (req.method === 'POST' && url.pathname === '/__release') {
    const sentMs = Date.now();
    const first = events.length;
    const count = Number(url.searchParams.get('count') ?? 1);
    for (let i = 0; i < count; i++) events.push(produce(first + i, sentMs));
    const frames = events.slice(first).map((data, i) => `id: ${first + i + 1}\ndata: ${data}\n\n`).join('');
    for (const stream of streams) stream.write(frames);
    return json(200, { released: count, total: events.length });
  }
  if (url.pathname === '/__stats') return json(200, { streams: streams.size, events: events.length });
  if (url.pathname === '/events/stream') {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(': open\n\n');
    streams.add(res);
    res.on('close', () => streams.delete(res));
    return;
  }
  if (url.pathname === '/events') {
    const after = Number(url.searchParams.get('after') ?? 0);
    const page = events.slice(after, after + Number(url.searchParams.get('limit') ?? 100));
    const next = page.length > 0 ? `,"nextCursor":"${after + page.length}"` : '';
    return json(200, `{"events":[${page.join(',')}]${next}}`);
  }
  json(404, { error: { code: 'NOT_FOUND', message: 'no route' } });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`);
});
