/**
 * Regression: between the listener opening and the routes being registered, requests were answered
 * 404 NOT_FOUND (a client treats that as final). Until start-up is over every request but /healthz
 * and /readyz must be 503 NOT_READY with Retry-After.
 */
import { createServer, type ServerResponse } from 'node:http';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { startGateway } from '../../src/app.ts';
import { parseConfig } from '../../src/gateway-config.ts';
import { closeAll, eventually, freePort, getJson, tempDir, track } from '../support/gateway.ts';

afterEach(closeAll);

/** A proto backend that holds its manifest answer until `release()`: start-up waits on it. */
async function slowManifestBackend() {
  const held: ServerResponse[] = [];
  let released = false;
  const server = createServer((req, res) => {
    if (!released) return void held.push(res);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }) });
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    waiting: () => held.length > 0,
    release() {
      released = true;
      for (const res of held.splice(0)) res.writeHead(404).end();
    },
  };
}

describe('start-up: not ready is 503, never 404', () => {
  it('answers NOT_READY with Retry-After to every route (known or not) until started; health and readiness answer', async () => {
    const backend = await slowManifestBackend();
    const port = await freePort();
    const config = await parseConfig(`server: { host: 127.0.0.1, port: ${port} }
storage: { driver: memory }
backends:
  - { id: payments, kind: proto, url: ${backend.url} }
`, `${tempDir()}/gateway.yaml`, {});
    const starting = startGateway(config, { logger: pino({ level: 'silent' }) });
    track({ close: async () => (await starting).close() });
    await eventually(() => backend.waiting(), 30_000);
    const base = `http://127.0.0.1:${port}/`;
    for (const path of ['commands', 'events', '.well-known/proto', 'no/such/path', 'services/payments/anything']) {
      const res = await getJson(`${base}${path}`);
      expect(res.status, path).toBe(503);
      expect(res.body.error.code, path).toBe('NOT_READY');
      expect(res.headers.get('retry-after'), path).toBe('1');
    }
    expect((await getJson(`${base}healthz`)).status).toBe(200);
    const ready = await getJson(`${base}readyz`);
    expect(ready.status).toBe(503);
    expect(ready.body.error).toMatchObject({ code: 'NOT_READY', details: { pending: ['starting'] } });
    backend.release();
    await starting;
    expect((await getJson(`${base}commands`)).status).toBe(200);
    expect((await getJson(`${base}no/such/path`)).status).toBe(404);
    expect((await getJson(`${base}readyz`)).status).toBe(200);
  }, 60_000);
});
