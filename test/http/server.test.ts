import pino from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import type { AuthConfig } from '../../src/config/types.ts';
import { Admission } from '../../src/edge/admission.ts';
import { NO_ADMISSION_METRICS } from '../../src/metrics/admission.ts';
import { createCors } from '../../src/http/cors.ts';
import type { Route } from '../../src/http/route.ts';
import { Router } from '../../src/http/router.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { httpMetrics } from '../../src/metrics/http.ts';
import { closeAll, getJson, track } from '../support/gateway.ts';

afterEach(closeAll);

const auth: AuthConfig = {
  type: 'apiKey',
  header: 'X-Api-Key',
  keys: [
    { id: 'writer', key: 'write-key', scopes: ['read', 'write'] },
    { id: 'reader', key: 'read-key', scopes: ['read'] },
  ],
};

/** The real HTTP core (router, auth, limits, CORS) with one route that echoes its JSON body. */
async function core(routes: Route[] = [], logger: pino.Logger = pino({ level: 'silent' })) {
  const echo: Route = { method: 'POST', path: '/echo', handle: async (ctx) => ({ status: 200, body: { got: await ctx.json(), by: ctx.principal.id } }) };
  const http = createHttpServer({
    router: new Router().add([echo, ...routes]),
    admission: new Admission({
      config: { auth, sse: { maxConnections: 10, maxConnectionsPerPrincipal: 5 } as never, mcp: { maxSessions: 10, maxSessionsPerPrincipal: 5 } as never },
      metrics: NO_ADMISSION_METRICS,
    }),
    cors: createCors(['https://app.example'], auth.header),
    limits: { maxBytes: 1024, maxDepth: 4 },
    logger,
    metrics: httpMetrics(new Registry()),
  });
  const address = await http.listen('127.0.0.1', 0);
  http.open();
  track({ close: () => http.close(1000) });
  return `http://127.0.0.1:${address.port}`;
}

const post = (url: string, body: string, key = 'write-key') =>
  getJson(`${url}/echo`, { method: 'POST', body, headers: { 'content-type': 'application/json', 'x-api-key': key } });

describe('HTTP core: the request log', () => {
  it('names the request id on the access line and on what a handler logs', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    const logs: Route = { method: 'GET', path: '/logs', public: true, handle: async (ctx) => {
      ctx.log.info('handled');
      return { status: 200, body: {} };
    } };
    const url = await core([logs], logger);
    expect((await fetch(`${url}/logs`, { headers: { 'x-request-id': 'req-42' } })).status).toBe(200);
    expect((await fetch(`${url}/nowhere`, { headers: { 'x-request-id': 'req-43', 'x-api-key': 'read-key' } })).status).toBe(404);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(lines.find((line) => line.msg === 'handled')).toMatchObject({ reqId: 'req-42' });
    expect(lines.filter((line) => line.msg === 'request')).toEqual([
      expect.objectContaining({ reqId: 'req-42', method: 'GET', path: '/logs', route: '/logs', status: 200 }),
      expect.objectContaining({ reqId: 'req-43', method: 'GET', path: '/nowhere', status: 404 }),
    ]);
  });
});

describe('HTTP core: limits and the order of checks', () => {
  it('accepts JSON within the limits', async () => {
    const url = await core();
    const res = await post(url, '{"a":[1,{"b":2}]}');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ got: { a: [1, { b: 2 }] }, by: 'writer' });
  });

  it('refuses malformed JSON with 400 INVALID_JSON', async () => {
    const url = await core();
    const res = await post(url, '{"a":');
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('INVALID_JSON');
  });

  it('refuses JSON deeper than maxJsonDepth with 400 and the limit in details', async () => {
    const url = await core();
    expect((await post(url, '[[[["ok"]]]]')).status).toBe(200);
    const res = await post(url, '[[[[["deep"]]]]]');
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'INVALID_JSON', details: { maxDepth: 4 } });
  });

  it('does not count brackets inside strings as depth', async () => {
    const url = await core();
    expect((await post(url, '{"s":"[[[[[[[[{{{{{{\\"]]]"}')).status).toBe(200);
  });

  it('refuses a body over bodyLimit with 413, declared or streamed', async () => {
    const url = await core();
    const big = JSON.stringify({ pad: 'x'.repeat(2000) });
    const declared = await post(url, big);
    expect(declared.status).toBe(413);
    expect(declared.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    const chunked = await getJson(`${url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'write-key' },
      body: new ReadableStream({ start(c) { c.enqueue(new TextEncoder().encode(big)); c.close(); } }),
      duplex: 'half',
    } as RequestInit);
    expect(chunked.status).toBe(413);
  });

  it('checks authentication before the body: 401 for an oversized unauthenticated body', async () => {
    const url = await core();
    const res = await post(url, JSON.stringify({ pad: 'x'.repeat(2000) }), 'wrong');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHENTICATED');
  });

  it('checks the scope before the body: 403 for a read-only key with malformed JSON', async () => {
    const url = await core();
    const res = await post(url, '{bad', 'read-key');
    expect(res.status).toBe(403);
    expect(res.body.error).toMatchObject({ code: 'FORBIDDEN', details: { scope: 'write' } });
  });

  it('answers an allowed origin\'s preflight and marks answers for it; other origins get no CORS headers', async () => {
    const url = await core();
    const preflight = await fetch(`${url}/echo`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
    const other = await fetch(`${url}/echo`, { method: 'POST', body: '{}', headers: { origin: 'https://evil.example', 'x-api-key': 'write-key' } });
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('turns an unexpected handler failure into a 500 with the error body, without crashing', async () => {
    const boom: Route = { method: 'GET', path: '/boom', handle: () => { throw new Error('bug'); } };
    const url = await core([boom]);
    const res = await getJson(`${url}/boom`, { headers: { 'x-api-key': 'read-key' } });
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ error: { code: 'INTERNAL', message: 'internal error' } });
    expect((await getJson(`${url}/boom`, { headers: { 'x-api-key': 'read-key' } })).status).toBe(500);
  });
});
