/**
 * A webhook receiver for the webhook benchmark, run as its own process:
 * `node bench/support/webhook-receiver.ts` prints `{"url": ...}` once listening. It answers every
 * POST 204 and counts it; when the body is an event with `data.sentMs` it also records the
 * end-to-end latency (arrival − release). `GET /__stats` → `{ count, firstMs, lastMs, p50, p99 }`
 * (epoch ms; latencies in ms, null without any), `POST /__reset` starts over.
 */
import { createServer } from 'node:http';

let count = 0;
let firstMs = 0;
let lastMs = 0;
let latencies: number[] = [];

/** The `q` quantile of sorted values. */
function quantile(sorted: number[], q: number): number | null {
  return sorted.length === 0 ? null : sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/__reset') {
      count = 0;
      latencies = [];
      return res.writeHead(204).end();
    }
    if (req.url === '/__stats') {
      const sorted = [...latencies].sort((a, b) => a - b);
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ count, firstMs, lastMs, p50: quantile(sorted, 0.5), p99: quantile(sorted, 0.99) }));
    }
    const now = Date.now();
    if (count === 0) firstMs = now;
    count++;
    lastMs = now;
    const sentMs = /"sentMs":(\d+)/.exec(Buffer.concat(chunks).toString('latin1'))?.[1];
    if (sentMs !== undefined) latencies.push(now - Number(sentMs));
    res.writeHead(204).end();
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`);
});
