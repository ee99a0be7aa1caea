import { createServer, type Server, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ANSWER_BYTES, sendCommand } from '../../src/backends/command-http.ts';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A real backend on loopback answering every request with `answer`. */
async function backend(answer: (res: ServerResponse) => void): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => answer(res));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as { port: number }).port}/commands`;
}

const post = (url: string) => sendCommand({ url, method: 'POST', headers: {}, body: { id: 'c-1' } }, new AbortController().signal, 5_000);

describe('sendCommand', () => {
  it('reads the answer whole and parses its JSON', async () => {
    const url = await backend((res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.write('{"id":');
      setTimeout(() => res.end('"c-1"}'), 10);
    });
    expect(await post(url)).toEqual({ status: 201, body: { id: 'c-1' } });
  });

  it('keeps at most MAX_ANSWER_BYTES of an answer too large, and still resolves with the status', async () => {
    const url = await backend((res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.end(`"${'x'.repeat(2 * MAX_ANSWER_BYTES)}"`);
    });
    const exchange = await post(url);
    expect(exchange.status).toBe(201);
    expect(typeof exchange.body).toBe('string');
    expect((exchange.body as string).length).toBeLessThanOrEqual(MAX_ANSWER_BYTES);
    expect((exchange.body as string).length).toBeGreaterThan(0);
  });

  it('rejects with BACKEND_UNAVAILABLE when the backend hangs up in the middle of its answer', async () => {
    const url = await backend((res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"id":');
      setTimeout(() => res.destroy(), 10);
    });
    await expect(post(url)).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });
});
