/**
 * A bare pass-through proxy (node:http in, undici out, bodies streamed), run as its own process:
 * the baseline a gateway should match. `TARGET=http://... node bench/support/bare-proxy.ts` prints
 * `{"url": ...}` once listening.
 */
import { createServer } from 'node:http';
import { Agent, request } from 'undici';

const target = process.env.TARGET!;
const agent = new Agent({ connections: 128 });
const server = createServer(async (req, res) => {
  try {
    const answer = await request(`${target}${req.url}`, { method: req.method as 'POST', headers: { 'content-type': 'application/json' }, body: req, dispatcher: agent });
    res.writeHead(answer.statusCode, { 'content-type': String(answer.headers['content-type'] ?? 'application/json') });
    for await (const chunk of answer.body) res.write(chunk);
    res.end();
  } catch {
    res.writeHead(502).end();
  }
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`);
});
