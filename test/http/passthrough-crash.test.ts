/**
 * Regression: a chunked POST a little over `server.bodyLimit` to a pass-through path killed the
 * gateway process (an unhandled 'error' on the Transform the request was piped into). The gateway
 * runs in its own process here, so a crash shows as an exit, not as a failed assertion in-process.
 */
import { createServer, request } from 'node:http';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, getJson, tempDir, track } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';

afterEach(closeAll);

async function echoBackend(): Promise<string> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

/** Sends `size` bytes in 256-byte chunks without a Content-Length; resolves with the status and body. */
function chunkedPost(url: string, size: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    let sent = 0;
    const next = (): void => {
      if (sent >= size) return void req.end();
      sent += 256;
      req.write('x'.repeat(256), () => setImmediate(next));
    };
    next();
  });
}

describe('pass-through body over the limit (regression: process crash)', () => {
  it('answers 413 PAYLOAD_TOO_LARGE to a chunked body over server.bodyLimit and keeps running', async () => {
    const file = join(tempDir(), 'gateway.yaml');
    writeFileSync(file, `server: { host: 127.0.0.1, port: 0, bodyLimit: 1kb }
storage: { driver: memory }
backends:
  - { id: payments, kind: proto, url: ${await echoBackend()} }
`);
    const gateway = spawnGateway(file);
    const listening = await eventually(() => gateway.logs.find((line) => line.msg === 'listening'), 30_000);
    const url: string = listening.url;
    let refused = 0;
    for (let i = 0; i < 3; i++) {
      const answer = await chunkedPost(`${url}services/payments/anything`, 4096).catch((err: Error) => ({ status: 0, body: err.message }));
      // The gateway may close the connection after the 413 while the client still writes; what
      // matters is that it never crashes and, when the answer arrives, that it is the error body.
      if (answer.status !== 0) {
        expect(answer.status).toBe(413);
        expect(JSON.parse(answer.body).error.code).toBe('PAYLOAD_TOO_LARGE');
        refused += 1;
      }
    }
    expect(refused).toBeGreaterThan(0);
    const health = await getJson(`${url}healthz`);
    expect(health.status).toBe(200);
    expect(gateway.child.exitCode).toBeNull();
    expect(gateway.stderr()).not.toContain('request body over the limit');
  }, 60_000);
});
