import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { exceedsJsonDepth, jsonDepth, readBody } from '../../src/http/body.ts';

const servers: Server[] = [];

afterEach(async () => {
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A real server on loopback that hands each request's `readBody` outcome to `outcomes`. */
async function bodyServer(maxBytes: number): Promise<{ port: number; next(): Promise<PromiseSettledResult<Buffer>> }> {
  const waiting: Array<(outcome: PromiseSettledResult<Buffer>) => void> = [];
  const server = createServer((req: IncomingMessage, res) => {
    void Promise.allSettled([readBody(req, maxBytes)]).then(([outcome]) => {
      waiting.shift()?.(outcome);
      res.end();
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { port, next: () => new Promise((resolve) => waiting.push(resolve)) };
}

/** Sends raw HTTP/1.1 text; `hangUp` closes the socket right after it. */
function send(port: number, text: string, hangUp: boolean): void {
  const socket = connect(port, '127.0.0.1', () => {
    socket.write(text);
    if (hangUp) socket.destroy();
  });
  socket.on('error', () => {});
  socket.resume();
}

describe('readBody', () => {
  it('reads a body sent in chunks whole', async () => {
    const server = await bodyServer(100);
    const outcome = server.next();
    send(server.port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n', false);
    expect(await outcome).toEqual({ status: 'fulfilled', value: Buffer.from('abcde') });
  });

  it('refuses a body past the limit that declared no length (413 PAYLOAD_TOO_LARGE)', async () => {
    const server = await bodyServer(4);
    const outcome = server.next();
    send(server.port, 'POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n3\r\ndef\r\n0\r\n\r\n', false);
    const result = await outcome;
    expect(result.status).toBe('rejected');
    expect((result as PromiseRejectedResult).reason).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
  });

  it('rejects (never hangs) when the client goes away before the body ends', async () => {
    const server = await bodyServer(100);
    const outcome = server.next();
    send(server.port, 'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 50\r\n\r\nonly ten b', true);
    const result = await outcome;
    expect(result.status).toBe('rejected');
    expect(String((result as PromiseRejectedResult).reason)).toMatch(/aborted|closed the request before its body ended/);
  });
});

describe('exceedsJsonDepth: the depth check before parsing', () => {
  it('agrees with the full scan on any JSON document and any limit', () => {
    fc.assert(
      fc.property(fc.json({ depthSize: 'large' }), fc.nat(12), (text, maxDepth) => {
        expect(exceedsJsonDepth(text, maxDepth)).toBe(jsonDepth(text) > maxDepth);
      }),
      { numRuns: 2000 },
    );
  });

  it('scans a document with more brackets than the limit: wide is allowed, deep is not', () => {
    const wide = JSON.stringify(Array.from({ length: 50 }, (_, i) => ({ i, tags: [i] })));
    expect(exceedsJsonDepth(wide, 3)).toBe(false);
    expect(exceedsJsonDepth('[[[["x"]]]]', 3)).toBe(true);
    expect(exceedsJsonDepth('{"s":"[[[[[[{{{{"}', 3)).toBe(false);
  });
});
