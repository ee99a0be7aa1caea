/**
 * A minimal protocol backend for the command benchmarks, run as its own process:
 * `node bench/support/command-sink.ts` prints `{"url": ...}` on stdout once listening. It serves
 * the catalogue and schema of AuthorizePayment, answers every `POST /commands` 201 { id }, and
 * counts arrivals: `GET /__stats` → `{ count, firstMs, lastMs }` (epoch ms), `POST /__reset`.
 */
import { createServer } from 'node:http';

let count = 0;
let firstMs = 0;
let lastMs = 0;

const server = createServer((req, res) => {
  let text = '';
  req.on('data', (chunk) => (text += chunk));
  req.on('end', () => {
    const json = (status: number, value: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(value));
    };
    if (req.method === 'POST' && req.url === '/commands') {
      const now = Date.now();
      if (count === 0) firstMs = now;
      count++;
      lastMs = now;
      return json(201, { id: (JSON.parse(text) as { id: string }).id });
    }
    if (req.url === '/__stats') return json(200, { count, firstMs, lastMs });
    if (req.url === '/__reset') {
      count = 0;
      return json(200, {});
    }
    if (req.url === '/commands') return json(200, { commands: [{ schema: 'authorize-payment', version: '1.0' }] });
    if (req.url === '/commands/authorize-payment/1.0') {
      return json(200, { type: 'object', required: ['orderId', 'amount'], properties: { orderId: { type: 'string' }, amount: { type: 'number' } } });
    }
    if (req.url?.startsWith('/events')) return json(200, { events: [] });
    json(404, { error: { code: 'NOT_FOUND', message: 'no route' } });
  });
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`);
});
