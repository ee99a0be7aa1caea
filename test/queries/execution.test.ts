import { afterEach, describe, expect, it } from 'vitest';
import { exampleBackends, protoBackend, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, freePort, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { metricValue } from '../bridges/webhooks/support.ts';
import { ordersQueryBackend, protoQueryBackend } from './support.ts';

afterEach(closeAll);

/** A legacy backend whose one query `probe` sends `params` through `query` (coercion shows in what arrives). */
function probeBackend(url: string, circuit = '{ failures: 5, cooldown: 30s }'): string {
  return `  - id: probe
    kind: legacy
    url: ${url}
    circuit: ${circuit}
    headers: { X-Backend-Token: backend-secret }
    queries:
      - schema: probe
        parameters:
          type: object
          required: [limit]
          properties: { limit: { type: integer, minimum: 1 }, tag: { type: array, items: { type: string } }, exact: { type: boolean } }
        request: { method: GET, path: "/items/{params.limit}", query: "{ 'next': params.limit + 1, 'tags': $count(params.tag), 'exact': $type(params.exact) }" }
        result: "{ 'got': response, 'status': status }"
`;
}

describe('legacy queries', () => {
  it('runs the request mapping and the result expression (the demo\'s list-orders)', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersQueryBackend(orders.url)}`));
    // The service starts with a created widget order and a shipped gadget order.
    const created = await getJson(`${gw.url}queries/list-orders?status=created`);
    expect(created.status).toBe(200);
    expect(created.body.orders.map((o: { sku: string; status: string }) => [o.sku, o.status])).toEqual([['widget', 'created']]);
    const shipped = await getJson(`${gw.url}services/orders/queries/list-orders?status=shipped`);
    expect(shipped.body.orders.map((o: { sku: string; status: string }) => [o.sku, o.status])).toEqual([['gadget', 'shipped']]);
    const all = await getJson(`${gw.url}queries/list-orders`);
    expect(all.body.orders).toHaveLength(2);
  });

  it('coerces query strings to the declared types (numbers, booleans, arrays from repeated or lone values)', async () => {
    const backend = await scriptedBackend((req, res) => sendJson(res, 200, { url: req.url, token: req.headers['x-backend-token'] }));
    const gw = await startTestGateway(gatewayYaml(`backends:\n${probeBackend(backend.url)}`));
    const many = await getJson(`${gw.url}queries/probe?limit=5&tag=a&tag=b&exact=true`);
    expect(many.status).toBe(200);
    expect(many.body).toEqual({ got: { url: '/items/5?next=6&tags=2&exact=boolean', token: 'backend-secret' }, status: 200 });
    const lone = await getJson(`${gw.url}queries/probe?limit=1&tag=a`);
    expect(lone.body.got.url).toBe('/items/1?next=2&tags=1');
  });

  it('refuses invalid or missing parameters with 400 INVALID_PARAMETER and details.errors, without calling the backend', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 200, {}));
    const gw = await startTestGateway(gatewayYaml(`backends:\n${probeBackend(backend.url)}`));
    const bad = await getJson(`${gw.url}queries/probe?limit=abc`);
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('INVALID_PARAMETER');
    expect(bad.body.error.details.errors).toEqual([expect.objectContaining({ path: '/limit' })]);
    expect(bad.body.error.message).toContain(`/limit ${bad.body.error.details.errors[0].message}`);
    const missing = await getJson(`${gw.url}queries/probe`);
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.errors).toEqual([expect.objectContaining({ path: '/limit' })]);
    expect(backend.received).toHaveLength(0);
  });

  it('passes a backend 4xx on as a 4xx with an error body, never a 500', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 400, { message: 'limit too large for this backend' }));
    const gw = await startTestGateway(gatewayYaml(`backends:\n${probeBackend(backend.url)}`));
    const { status, body } = await getJson(`${gw.url}queries/probe?limit=5`);
    expect(status).toBe(400);
    expect(body.error).toEqual({ code: 'INVALID_PARAMETER', message: 'limit too large for this backend', details: { status: 400 } });
  });

  it('answers 504 BACKEND_TIMEOUT when the backend is slower than the timeout', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`commands: { dispatch: { timeout: 300ms } }
backends:
  - id: slowpoke
    kind: legacy
    url: ${payments.url}
    queries:
      - schema: wait
        parameters: { type: object, properties: { ms: { type: integer } } }
        request: { path: /slow, query: "{ 'ms': params.ms }" }
`));
    const quick = await getJson(`${gw.url}queries/wait?ms=10`);
    expect(quick).toMatchObject({ status: 200, body: { waitedMs: 10 } });
    const started = Date.now();
    const slow = await getJson(`${gw.url}queries/wait?ms=3000`);
    expect(slow.status).toBe(504);
    expect(slow.body.error.code).toBe('BACKEND_TIMEOUT');
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('answers 503 BACKEND_UNAVAILABLE for an unreachable backend, then refuses at once while its circuit is open', async () => {
    const port = await freePort();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${probeBackend(`http://127.0.0.1:${port}`, '{ failures: 2, cooldown: 30s }')}`));
    for (let i = 0; i < 2; i++) {
      const down = await getJson(`${gw.url}queries/probe?limit=1`);
      expect(down.status).toBe(503);
      expect(down.body.error.code).toBe('BACKEND_UNAVAILABLE');
      expect(down.body.error.details?.circuit).toBeUndefined();
    }
    const open = await getJson(`${gw.url}queries/probe?limit=1`);
    expect(open.status).toBe(503);
    expect(open.body.error.details).toEqual({ circuit: 'open' });
    expect(Number(open.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('proto queries', () => {
  it('forwards GET {endpoint}queries/{schema}?… and returns the body (the example payments service)', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${protoBackend(payments.url)}`));
    const { status, body } = await getJson(`${gw.url}queries/payment-status?orderId=ord-9`);
    expect(status).toBe(200);
    expect(body).toEqual({ orderId: 'ord-9', status: 'unknown' });
    const scoped = await getJson(`${gw.url}services/payments/queries/payment-status?orderId=ord-9`);
    expect(scoped.body).toEqual(body);
    const missing = await getJson(`${gw.url}queries/payment-status`);
    expect(missing.status).toBe(400);
    expect(missing.body.error.details.errors).toEqual([expect.objectContaining({ path: '/orderId' })]);
  });

  it('sends the backend headers and trace context, never the caller\'s credentials; rewrites backend URLs in the answer', async () => {
    const backend = await protoQueryBackend((req, res, base) => sendJson(res, 200, { url: req.url, headers: req.headers, self: `${base}/things/1` }));
    const gw = await startTestGateway(gatewayYaml(`auth:
  type: apiKey
  queryParam: api_key
  keys: [{ id: reader, key: read-key, scopes: [read] }]
backends:
  - { id: echo, kind: proto, url: "${backend.url}", headers: { X-Backend-Token: backend-secret } }
`));
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const { status, body } = await getJson(`${gw.url}queries/echo?n=2&api_key=read-key`, { headers: { 'x-api-key': 'read-key', authorization: 'Bearer read-key', traceparent } });
    expect(status).toBe(200);
    expect(body.url).toBe('/queries/echo?n=2');
    expect(body.headers).toMatchObject({ 'x-backend-token': 'backend-secret', traceparent });
    expect(body.headers['x-api-key']).toBeUndefined();
    expect(body.headers.authorization).toBeUndefined();
    expect(body.self).toBe(`${gw.url}services/echo/things/1`);
    const document = await getJson(`${gw.url}queries/echo/1`, { headers: { 'x-api-key': 'read-key' } });
    expect(document.body.description).toBe(`see ${gw.url}services/echo/docs`);
  });

  it('passes a 404 on with the backend\'s error body; a refused gateway credential or a 5xx is a 503', async () => {
    const plan: Array<[number, unknown]> = [[404, { error: { code: 'NOT_FOUND', message: 'no such order' } }], [401, { message: 'who are you' }], [500, { message: 'boom' }]];
    const backend = await protoQueryBackend((_req, res) => {
      const [status, body] = plan.shift()!;
      sendJson(res, status, body);
    });
    const gw = await startTestGateway(gatewayYaml(`backends:\n  - { id: echo, kind: proto, url: "${backend.url}" }`));
    const notFound = await getJson(`${gw.url}queries/echo`);
    expect(notFound).toMatchObject({ status: 404, body: { error: { code: 'NOT_FOUND', message: 'no such order' } } });
    const refused = await getJson(`${gw.url}queries/echo`);
    expect(refused).toMatchObject({ status: 503, body: { error: { code: 'BACKEND_UNAVAILABLE', details: { status: 401 } } } });
    const broken = await getJson(`${gw.url}queries/echo`);
    expect(broken).toMatchObject({ status: 503, body: { error: { code: 'BACKEND_UNAVAILABLE', details: { status: 500 } } } });
  });
});

describe('query metrics', () => {
  it('counts queries by catalogue schema (or unknown) and outcome', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersQueryBackend(orders.url)}`));
    await getJson(`${gw.url}queries/list-orders`);
    await getJson(`${gw.url}queries/list-orders?status=lost`);
    await getJson(`${gw.url}queries/no-such-query`);
    expect(await metricValue(gw, 'proto_gateway_queries_total', { schema: 'list-orders', outcome: 'ok' })).toBe(1);
    expect(await metricValue(gw, 'proto_gateway_queries_total', { schema: 'list-orders', outcome: 'invalid_parameter' })).toBe(1);
    expect(await metricValue(gw, 'proto_gateway_queries_total', { schema: 'unknown', outcome: 'unknown_schema' })).toBe(1);
  });
});
