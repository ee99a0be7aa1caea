import { createServer, request, type IncomingMessage } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { closeAll, freePort, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';
import { readSse } from '../support/sse.ts';

afterEach(closeAll);

/** A backend that answers every request with what it received. */
async function echoBackend() {
  const server = createServer(async (req: IncomingMessage, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`;
}

const auth = `auth:
  type: apiKey
  queryParam: api_key
  keys:
    - { id: ops, key: ops-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }`;

function proxyYaml(url: string, extra = '') {
  return gatewayYaml(`${auth}
commands: { dispatch: { timeout: 300ms } }
server: { host: 127.0.0.1, port: 0, bodyLimit: 1kb }
backends:
  - id: echo
    kind: proto
    url: ${url}
    headers: { X-Backend-Token: backend-secret }
${extra}`).replace('server: { host: 127.0.0.1, port: 0 }\n', '');
}

describe('pass-through under /services/{id}/', () => {
  it('forwards the path, query and body to the backend endpoint', async () => {
    const gw = await startTestGateway(proxyYaml(await echoBackend()));
    const res = await getJson(`${gw.url}services/echo/some/path?x=1&y=two`, { method: 'POST', body: '{"a":1}', headers: { 'x-api-key': 'ops-key' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ method: 'POST', url: '/some/path?x=1&y=two', body: '{"a":1}' });
  });

  it('never forwards the caller\'s credentials, in any of their forms', async () => {
    const gw = await startTestGateway(proxyYaml(await echoBackend()));
    const res = await getJson(`${gw.url}services/echo/x?api_key=ops-key&keep=1`, { headers: { 'x-api-key': 'ops-key', authorization: 'Bearer ops-key' } });
    expect(res.status).toBe(200);
    expect(res.body.url).toBe('/x?keep=1');
    expect(res.body.headers['x-api-key']).toBeUndefined();
    expect(res.body.headers.authorization).toBeUndefined();
    expect(JSON.stringify(res.body)).not.toContain('ops-key');
  });

  it('adds the backend\'s headers, X-Forwarded-*, and the trace context; drops hop-by-hop headers', async () => {
    const gw = await startTestGateway(proxyYaml(await echoBackend()));
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    // fetch refuses to send a Connection header, so this request goes through node:http.
    const body = await new Promise<string>((resolve, reject) => {
      const req = request(`${gw.url}services/echo/x`, {
        headers: { 'x-api-key': 'ops-key', traceparent, connection: 'keep-alive, x-private-hop', 'x-private-hop': 'secret', 'keep-alive': 'timeout=5' },
      }, async (res) => {
        let text = '';
        for await (const chunk of res) text += chunk;
        resolve(text);
      });
      req.on('error', reject);
      req.end();
    });
    const { headers } = JSON.parse(body);
    expect(headers['x-backend-token']).toBe('backend-secret');
    expect(headers['x-forwarded-for']).toBe('127.0.0.1');
    expect(headers['x-forwarded-proto']).toBe('http');
    expect(headers['x-forwarded-host']).toBe(new URL(gw.url).host);
    expect(headers.traceparent).toBe(traceparent);
    expect(headers['x-private-hop']).toBeUndefined();
    expect(headers['keep-alive']).toBeUndefined();
  });

  it('needs the write scope for mutations and read for GETs', async () => {
    const gw = await startTestGateway(proxyYaml(await echoBackend()));
    expect((await getJson(`${gw.url}services/echo/x`, { headers: { 'x-api-key': 'read-key' } })).status).toBe(200);
    const post = await getJson(`${gw.url}services/echo/x`, { method: 'POST', body: '{}', headers: { 'x-api-key': 'read-key' } });
    expect(post.status).toBe(403);
    expect(post.body.error.code).toBe('FORBIDDEN');
  });

  it('refuses a body over bodyLimit with 413 and does not forward it', async () => {
    const gw = await startTestGateway(proxyYaml(await echoBackend()));
    const res = await getJson(`${gw.url}services/echo/x`, { method: 'POST', body: 'x'.repeat(5000), headers: { 'x-api-key': 'ops-key' } });
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
  });

  it('streams SSE through without buffering: the first tick arrives while the stream stays open', async () => {
    const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 60_000 }));
    const gw = await startTestGateway(proxyYaml(payments.url).replace(/id: echo/, 'id: payments'));
    // The backend sends tick 1 at once and tick 2 a minute later: only an unbuffered proxy passes in time.
    const res = await fetch(`${gw.url}services/payments/sse-ticks?n=2&interval=60000`, { headers: { 'x-api-key': 'ops-key', accept: 'text/event-stream' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const records = await readSse(res.body as AsyncIterable<Uint8Array>, { until: (r) => r.id === '1', timeoutMs: 5000 });
    expect(records.at(-1)?.id).toBe('1');
    await res.body?.cancel();
  });

  it('passes a quiet stream\'s headers on at once, not with its first event', async () => {
    const quiet = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      res.flushHeaders();
    });
    await new Promise<void>((resolve) => quiet.listen(0, '127.0.0.1', resolve));
    track({ close: () => new Promise<void>((resolve) => { quiet.closeAllConnections(); quiet.close(() => resolve()); }) });
    const gw = await startTestGateway(proxyYaml(`http://127.0.0.1:${(quiet.address() as { port: number }).port}`));
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), 5000);
    const res = await fetch(`${gw.url}services/echo/stream`, { headers: { 'x-api-key': 'ops-key' }, signal: controller.signal });
    clearTimeout(timer);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
    await res.body?.cancel();
  });

  it('answers 504 BACKEND_TIMEOUT when the backend is too slow and 503 when it is unreachable', async () => {
    const payments = track(await startPaymentsService({ port: 0 }));
    const gw = await startTestGateway(proxyYaml(payments.url));
    const slow = await getJson(`${gw.url}services/echo/slow?ms=3000`, { headers: { 'x-api-key': 'ops-key' } });
    expect(slow.status).toBe(504);
    expect(slow.body.error.code).toBe('BACKEND_TIMEOUT');
    const down = await startTestGateway(proxyYaml(`http://127.0.0.1:${await freePort()}`));
    const unreachable = await getJson(`${down.url}services/echo/x`, { headers: { 'x-api-key': 'ops-key' } });
    expect(unreachable.status).toBe(503);
    expect(unreachable.body.error.code).toBe('BACKEND_UNAVAILABLE');
  });

  it('answers 404 SERVICE_NOT_FOUND for an unknown service', async () => {
    const gw = await startTestGateway(proxyYaml(await echoBackend()));
    const res = await getJson(`${gw.url}services/nobody/x`, { headers: { 'x-api-key': 'ops-key' } });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('SERVICE_NOT_FOUND');
  });
});

describe('pass-through and the backend\'s circuit', () => {
  it('opens after consecutive failures, refuses without calling the backend, and closes when a probe succeeds', async () => {
    const port = await freePort();
    const gw = await startTestGateway(
      proxyYaml(`http://127.0.0.1:${port}`).replace('headers: { X-Backend-Token: backend-secret }', 'circuit: { failures: 2, cooldown: 300ms }') + '\nmetrics: { public: true }',
    );
    const get = () => getJson(`${gw.url}services/echo/x`, { headers: { 'x-api-key': 'ops-key' } });
    expect((await get()).body.error.details?.circuit).toBeUndefined();
    expect((await get()).body.error.details?.circuit).toBeUndefined();
    const open = await get();
    expect(open.status).toBe(503);
    expect(open.body.error).toMatchObject({ code: 'BACKEND_UNAVAILABLE', details: { circuit: 'open' } });
    expect(open.headers.get('retry-after')).toBe('1');
    expect(await (await fetch(`${gw.url}metrics`)).text()).toMatch(/proto_gateway_backend_circuit_state\{backend="echo"\} 2/);

    const { createServer } = await import('node:http');
    const server = createServer((_req, res) => res.end('{"back":true}'));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    track({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    await new Promise((r) => setTimeout(r, 350));
    expect((await get()).body).toEqual({ back: true });
    expect(await (await fetch(`${gw.url}metrics`)).text()).toMatch(/proto_gateway_backend_circuit_state\{backend="echo"\} 0/);
  });
});

describe('pass-through paths and headers that could escape', () => {
  it('keeps the client\'s encoding, refuses encoded slashes, and never leaves the endpoint (regression)', async () => {
    const backend = await echoBackend();
    const gw = await startTestGateway(proxyYaml(`${backend}/api/v1`));
    const get = (path: string) => getJson(`${gw.url}services/echo/${path}`, { headers: { 'x-api-key': 'ops-key' } });
    expect((await get('a%20b/c?q=1')).body.url).toBe('/api/v1/a%20b/c?q=1');
    for (const path of ['..%2f..%2fsecret', '..%2F..%2Fsecret', 'x%5c..%5csecret']) {
      const res = await get(path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.code).toBe('INVALID_PARAMETER');
    }
    const dotted = await getJson(`${gw.url}services/echo/a/../../../secret`, { headers: { 'x-api-key': 'ops-key' } });
    expect(dotted.status).toBe(404);
  });

  it('rewrites a Location that points at the backend to the public URL', async () => {
    const { createServer } = await import('node:http');
    let base = '';
    const server = createServer((req, res) => {
      if (req.url === '/api/v1/absolute') res.writeHead(302, { location: `${base}/api/v1/elsewhere?x=1` }).end();
      else res.writeHead(201, { location: '/api/v1/items/7' }).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    track({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const gw = await startTestGateway(proxyYaml(`${base}/api/v1`));
    const absolute = await fetch(`${gw.url}services/echo/absolute`, { headers: { 'x-api-key': 'ops-key' }, redirect: 'manual' });
    expect(absolute.headers.get('location')).toBe(`${gw.url}services/echo/elsewhere?x=1`);
    const relative = await fetch(`${gw.url}services/echo/items`, { method: 'POST', headers: { 'x-api-key': 'ops-key' } });
    expect(relative.headers.get('location')).toBe(`${gw.url}services/echo/items/7`);
  });
});
