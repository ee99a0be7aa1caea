/**
 * A bare pass-through proxy (node:http in, undici out, bodies streamed): the baseline a gateway
 * should match. Imported by in-process benchmarks (`bareProxy`), or run as its own process:
 * `TARGET=http://... node bench/support/bare-proxy.ts` prints `{"url": ...}` once listening.
 */
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

/** A bare proxy to `target`, not yet listening; `connections` per origin to the target. */
export function bareProxy(target: string, connections = 128): Server {
  const agent = new Agent({ connections });
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
  return server;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const server = bareProxy(process.env.TARGET!);
  server.listen(0, '127.0.0.1', () => {
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })}\n`);
  });
}
