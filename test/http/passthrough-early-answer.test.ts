/**
 * A backend that answers a pass-through request before reading its body and closes the connection
 * while the client is still uploading (a 404 or 401 answered from the headers, a 413 of its own).
 */
import { createServer, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, startTestGateway, track } from '../support/gateway.ts';

afterEach(closeAll);

/** Answers `status` at once, reads nothing and closes the connection (as Node does for an unread large body). */
async function earlyBackend(status: number): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json', connection: 'close' });
    res.end(JSON.stringify({ error: { code: 'EARLY', message: 'answered before the body' } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** Sends `size` bytes slowly in chunks; resolves with the status and body (or status 0 and the error). */
function slowPost(url: string, size: number, chunk = 512): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', (err) => resolve({ status: res.statusCode ?? 0, body: `(aborted) ${err.message}` }));
    });
    req.on('error', (err) => resolve({ status: 0, body: err.message }));
    let sent = 0;
    const next = (): void => {
      if (req.destroyed) return;
      if (sent >= size) return void req.end();
      sent += chunk;
      req.write('x'.repeat(chunk), () => setTimeout(next, 2));
    };
    next();
  });
}

/** Resets the connection (TCP RST) once the request's headers arrived, answering nothing, or after writing an answer. */
async function resettingBackend(answerFirst: boolean): Promise<string> {
  const server = createServer((req, res) => {
    if (answerFirst) res.writeHead(404, { 'content-type': 'application/json' }).write('{"error":{"code":"EARLY"}}');
    req.socket.resetAndDestroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

describe('pass-through: a backend that resets during the upload', () => {
  it('answers 503 BACKEND_UNAVAILABLE with details.reason connection-reset, whether or not the backend wrote an answer before its reset', async () => {
    for (const answerFirst of [false, true]) {
      const gw = await startTestGateway(gatewayYaml(`backends:\n  - { id: payments, kind: proto, url: ${await resettingBackend(answerFirst)} }`));
      const answer = await slowPost(`${gw.url}services/payments/x/1`, 64 * 1024);
      // An answer that reached the gateway before the reset is forwarded; one the reset discarded is not.
      const forwarded = answerFirst && answer.status === 404;
      if (!forwarded) {
        expect(answer.status, answer.body).toBe(503);
        expect(JSON.parse(answer.body).error).toMatchObject({ code: 'BACKEND_UNAVAILABLE', details: { reason: 'connection-reset' } });
      }
    }
  });
});

describe('pass-through: a backend that answers before the body is read', () => {
  it('the client gets the backend\'s own answer (not 503 BACKEND_UNAVAILABLE), whatever arrives first', async () => {
    const backend = await earlyBackend(404);
    const gw = await startTestGateway(gatewayYaml(`backends:\n  - { id: payments, kind: proto, url: ${backend} }`));
    const answers: Array<{ status: number; body: string }> = [];
    for (let i = 0; i < 20; i++) answers.push(await slowPost(`${gw.url}services/payments/x/${i}`, 64 * 1024));
    for (const answer of answers) expect(answer.status, answer.body).toBe(404);
  });
});
