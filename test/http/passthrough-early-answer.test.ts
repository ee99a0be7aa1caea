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

/**
 * Resets the connection (TCP RST) once the request's headers arrived: answering nothing, after
 * writing part of an answer, or (`afterMs`) that long after a whole answer.
 */
async function resettingBackend(answerFirst: boolean, afterMs?: number): Promise<string> {
  const server = createServer((req, res) => {
    if (afterMs !== undefined) {
      res.writeHead(404, { 'content-type': 'application/json', 'content-length': 26 }).end('{"error":{"code":"EARLY"}}');
      setTimeout(() => req.socket.resetAndDestroy(), afterMs);
      return;
    }
    if (answerFirst) res.writeHead(404, { 'content-type': 'application/json' }).write('{"error":{"code":"EARLY"}}');
    req.socket.resetAndDestroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** Like `slowPost`, but settles once both the answer and the whole upload are done (`upload`: `sent`, or the write error). */
function uploadAll(url: string, size: number, chunk = 1024): Promise<{ status: number; body: string; upload: string }> {
  return new Promise((resolve) => {
    let answer: { status: number; body: string } | undefined;
    let upload: string | undefined;
    const settle = (): void => {
      if (answer && upload) resolve({ ...answer, upload });
    };
    const req = request(url, { method: 'PUT', headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => { answer = { status: res.statusCode ?? 0, body }; settle(); });
    });
    req.on('error', (err) => {
      upload ??= err.message;
      answer ??= { status: 0, body: '' };
      settle();
    });
    let sent = 0;
    req.on('close', () => {
      // Closed under the upload without an error (the answer had arrived): the rest was cut off.
      if (sent < size) upload ??= `cut off after ${sent} bytes`;
      settle();
    });
    const next = (): void => {
      if (req.destroyed) return;
      if (sent >= size) {
        req.end(() => { upload ??= 'sent'; settle(); });
        return;
      }
      sent += chunk;
      req.write('x'.repeat(chunk), () => setTimeout(next, 2));
    };
    next();
  });
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

describe('pass-through: a backend that answers whole, then resets while the upload goes on', () => {
  it('the client gets that whole answer, and its upload is read and dropped, not cut off (fuzz seed 1404077140: write EPIPE)', async () => {
    const gw = await startTestGateway(gatewayYaml(`backends:\n  - { id: payments, kind: proto, url: ${await resettingBackend(true, 50)} }`));
    for (let i = 0; i < 3; i++) {
      const answer = await uploadAll(`${gw.url}services/payments/x/${i}`, 128 * 1024);
      expect(answer).toEqual({ status: 404, body: '{"error":{"code":"EARLY"}}', upload: 'sent' });
    }
  });
});

describe('pass-through: a backend that answers before the body is read', () => {
  it('the client gets the backend\'s own answer (not 503 BACKEND_UNAVAILABLE), whatever arrives first', async () => {
    const backend = await earlyBackend(404);
    const gw = await startTestGateway(gatewayYaml(`backends:\n  - { id: payments, kind: proto, url: ${backend} }`));
    const answers: Array<{ status: number; body: string }> = [];
    for (let i = 0; i < 10; i++) answers.push(await slowPost(`${gw.url}services/payments/x/${i}`, 32 * 1024));
    for (const answer of answers) expect(answer.status, answer.body).toBe(404);
  });
});
