import { createServer, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type Server as NetServer } from 'node:net';
import { Pool } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ProtoError } from '../../src/errors.ts';
import { MAX_ANSWER_BYTES, sendCommand } from '../../src/backends/command-http.ts';

const servers: Server[] = [];
const netServers: NetServer[] = [];

afterEach(async () => {
  for (const server of netServers.splice(0)) await new Promise((resolve) => server.close(resolve));
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
    // Exactly the answer's first MAX_ANSWER_BYTES, nothing made up after them.
    expect(exchange.body).toBe(`"${'x'.repeat(MAX_ANSWER_BYTES - 1)}`);
  });

  it('takes the final status after an informational answer (103 Early Hints)', async () => {
    const url = await backend((res) => {
      res.writeEarlyHints({ link: '</style.css>; rel=preload' });
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":"c-1"}');
    });
    expect(await post(url)).toEqual({ status: 201, body: { id: 'c-1' } });
  });

  it('rejects with BACKEND_UNAVAILABLE, without crashing, when the backend answers with bytes that are not HTTP', async () => {
    const server = createNetServer((socket) => socket.once('data', () => socket.end('SSH-2.0-OpenSSH\r\n\r\n\u0000\u0001garbage')));
    netServers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/commands`;
    const err = (await post(url).catch((e: unknown) => e)) as ProtoError;
    expect(err).toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
    expect(err.message).toMatch(/^the backend is unreachable \((?:[A-Z0-9_]+|connection failed)\)$/);
  });

  it('rejects with BACKEND_UNAVAILABLE when the backend hangs up in the middle of its answer', async () => {
    const url = await backend((res) => {
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': '100' });
      res.write('{"id":');
      setTimeout(() => res.destroy(), 10);
    });
    await expect(post(url)).rejects.toMatchObject({ code: 'BACKEND_UNAVAILABLE' });
  });

  it('parses Retry-After of an answer (seconds) into retryAfterMs', async () => {
    const url = await backend((res) => {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '2' });
      res.end('{"error":{"code":"BUSY","message":"later"}}');
    });
    expect(await post(url)).toEqual({ status: 503, body: { error: { code: 'BUSY', message: 'later' } }, retryAfterMs: 2_000 });
  });

  it('rejects with BACKEND_TIMEOUT at the deadline when the backend takes the request and never answers', async () => {
    const url = await backend(() => {});
    const started = Date.now();
    await expect(sendCommand({ url, method: 'POST', headers: {}, body: {} }, new AbortController().signal, 150)).rejects.toMatchObject({ code: 'BACKEND_TIMEOUT' });
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('rejects with BACKEND_TIMEOUT at the deadline when the answer drips and never ends, and drops the connection', async () => {
    let closed = false;
    const url = await backend((res) => {
      res.writeHead(201, { 'content-type': 'application/json' });
      res.write('[');
      const drip = setInterval(() => res.write('0,'), 20);
      res.on('close', () => {
        clearInterval(drip);
        closed = true;
      });
    });
    const started = Date.now();
    await expect(sendCommand({ url, method: 'POST', headers: {}, body: {} }, new AbortController().signal, 200)).rejects.toMatchObject({ code: 'BACKEND_TIMEOUT' });
    expect(Date.now() - started).toBeLessThan(2_000);
    await vi.waitFor(() => expect(closed).toBe(true));
  });

  it('refuses at its deadline a request still waiting for a connection, and never sends it once one is free', async () => {
    const seen: string[] = [];
    const held: ServerResponse[] = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => (text += chunk));
      req.on('end', () => {
        seen.push((JSON.parse(text) as { id: string }).id);
        if (seen.length === 1) held.push(res);
        else res.writeHead(201, { 'content-type': 'application/json' }).end('{}');
      });
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    // One connection: the first request holds it, the second waits in the pool's queue.
    const pool = new Pool(origin, { connections: 1, pipelining: 1 });
    try {
      const signal = new AbortController().signal;
      const first = sendCommand({ url: `${origin}/commands`, method: 'POST', headers: {}, body: { id: 'first' }, dispatcher: pool }, signal, 5_000);
      await vi.waitFor(() => expect(seen).toEqual(['first']));
      const started = Date.now();
      await expect(sendCommand({ url: `${origin}/commands`, method: 'POST', headers: {}, body: { id: 'queued' }, dispatcher: pool }, signal, 100)).rejects.toMatchObject({ code: 'BACKEND_TIMEOUT' });
      expect(Date.now() - started).toBeLessThan(2_000);
      held[0].writeHead(201, { 'content-type': 'application/json' }).end('{"id":"first"}');
      expect(await first).toMatchObject({ status: 201, body: { id: 'first' } });
      // The queued request got the connection after its deadline: it was dropped, not sent.
      const third = await sendCommand({ url: `${origin}/commands`, method: 'POST', headers: {}, body: { id: 'third' }, dispatcher: pool }, signal, 5_000);
      expect(third.status).toBe(201);
      expect(seen).toEqual(['first', 'third']);
    } finally {
      await pool.destroy();
    }
  });

  it('rejects every exchange of a signal with its reason when it aborts (shutdown), and refuses to start on an aborted one', async () => {
    const url = await backend(() => {});
    const shutdown = new AbortController();
    const exchanges = [1, 2, 3].map((n) => sendCommand({ url, method: 'POST', headers: {}, body: { id: `c-${n}` } }, shutdown.signal, 10_000));
    const reason = new Error('shutting down');
    setTimeout(() => shutdown.abort(reason), 50);
    await Promise.all(exchanges.map((exchange) => expect(exchange).rejects.toBe(reason)));
    await expect(sendCommand({ url, method: 'POST', headers: {}, body: {} }, shutdown.signal, 10_000)).rejects.toBe(reason);
  });

  it('rejects with BACKEND_UNAVAILABLE, naming only the transport code, when nothing listens', async () => {
    const url = await backend(() => {});
    const server = servers.pop()!;
    await new Promise((resolve) => server.close(resolve));
    const err = (await post(url).catch((e: unknown) => e)) as ProtoError;
    expect(err).toMatchObject({ code: 'BACKEND_UNAVAILABLE', message: 'the backend is unreachable (ECONNREFUSED)' });
    expect(err.message).not.toContain('127.0.0.1');
  });
});
