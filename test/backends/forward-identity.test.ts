/**
 * `backends[].forwardIdentity`: what a backend learns of the caller, on commands (dispatched later
 * from the outbox, with the principal recorded at accept time), queries and the pass-through; a
 * caller can never set the identity headers itself. Tokens come from a real OpenID provider.
 */
import { createServer, type IncomingHttpHeaders } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';
import { startTestIdp, type TestClient, type TestIdp } from '../support/oidc-provider.ts';

afterEach(closeAll);

const writer: TestClient = { id: 'writer-svc', secret: 'writer-secret', scope: 'read write' };

/** A backend that records every request's path and headers and answers `{}`. */
async function recordingBackend() {
  const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders }> = [];
  const server = createServer(async (req, res) => {
    for await (const _ of req);
    seen.push({ method: req.method!, url: req.url!, headers: req.headers });
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, seen };
}

async function setup(mode: string) {
  const provider: TestIdp = track(await startTestIdp([writer]));
  const legacy = await recordingBackend();
  const proto = await recordingBackend();
  const gw = await startTestGateway(gatewayYaml(`auth:
  type: oauth2
  keys: [{ id: ops, key: ops-key, scopes: [read, write] }]
  oauth2: { issuer: ${provider.issuer}, audience: proto-gateway }
backends:
  - id: shop
    kind: legacy
    url: ${legacy.url}
    forwardIdentity: ${mode}
    commands:
      - type: PlaceOrder
        jsonSchema: { type: object }
        request: { method: POST, path: /orders, body: "data" }
        events: { success: { type: OrderPlacedV1, data: "response" } }
    queries:
      - schema: list-orders
        parameters: { type: object }
        request: { method: GET, path: /orders }
  - id: echo
    kind: proto
    url: ${proto.url}
    forwardIdentity: ${mode}
`));
  const token = await provider.token(writer);
  return { gw, legacy, proto, token, headers: { authorization: `Bearer ${token}` } };
}

async function placeOrder(gw: { url: string }, headers: Record<string, string>) {
  const res = await getJson(`${gw.url}commands`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ specversion: '1.0', id: crypto.randomUUID(), source: 'urn:test', type: 'PlaceOrder', time: new Date().toISOString(), datacontenttype: 'application/json', dataschema: `${gw.url}commands/place-order/1.0`, data: {} }),
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
}

describe('forwardIdentity', () => {
  it('header: commands carry the principal recorded at accept time; queries and the pass-through the principal and scopes; a caller-sent header is replaced', async () => {
    const { gw, legacy, proto, headers } = await setup('header');
    await placeOrder(gw, headers);
    const command = await eventually(() => legacy.seen.find((r) => r.url === '/orders' && r.method === 'POST'));
    expect(command.headers['x-proto-principal']).toBe('writer-svc');
    expect(command.headers.authorization).toBeUndefined();
    expect((await getJson(`${gw.url}queries/list-orders`, { headers })).status).toBe(200);
    const query = legacy.seen.find((r) => r.method === 'GET' && r.url === '/orders')!;
    expect(query.headers).toMatchObject({ 'x-proto-principal': 'writer-svc', 'x-proto-scopes': 'read write' });
    expect(query.headers.authorization).toBeUndefined();
    const forged = await getJson(`${gw.url}services/echo/anything`, { headers: { ...headers, 'x-proto-principal': 'admin', 'x-proto-scopes': 'admin' } });
    expect(forged.status).toBe(200);
    const passed = proto.seen.find((r) => r.url === '/anything')!;
    expect(passed.headers).toMatchObject({ 'x-proto-principal': 'writer-svc', 'x-proto-scopes': 'read write' });
  });

  it('token: queries and the pass-through carry the verified token; commands only the principal (a token may expire before dispatch)', async () => {
    const { gw, legacy, proto, token, headers } = await setup('token');
    expect((await getJson(`${gw.url}queries/list-orders`, { headers })).status).toBe(200);
    expect(legacy.seen.find((r) => r.method === 'GET')!.headers.authorization).toBe(`Bearer ${token}`);
    expect((await getJson(`${gw.url}services/echo/x`, { headers })).status).toBe(200);
    expect(proto.seen.find((r) => r.url === '/x')!.headers.authorization).toBe(`Bearer ${token}`);
    await placeOrder(gw, headers);
    const command = await eventually(() => legacy.seen.find((r) => r.url === '/orders' && r.method === 'POST'));
    expect(command.headers.authorization).toBeUndefined();
    expect(command.headers['x-proto-principal']).toBe('writer-svc');
    // an API-key caller has no token: the principal instead
    expect((await getJson(`${gw.url}services/echo/key`, { headers: { 'x-api-key': 'ops-key' } })).status).toBe(200);
    const byKey = proto.seen.find((r) => r.url === '/key')!;
    expect(byKey.headers.authorization).toBeUndefined();
    expect(byKey.headers['x-proto-principal']).toBe('ops');
  });

  it('none (default): nothing of the caller reaches the backend, and headers the caller set are removed', async () => {
    const { gw, legacy, proto, headers } = await setup('none');
    await placeOrder(gw, headers);
    const command = await eventually(() => legacy.seen.find((r) => r.url === '/orders'));
    expect(command.headers['x-proto-principal']).toBeUndefined();
    await getJson(`${gw.url}services/echo/y`, { headers: { ...headers, 'x-proto-principal': 'admin' } });
    const passed = proto.seen.find((r) => r.url === '/y')!;
    expect(passed.headers['x-proto-principal']).toBeUndefined();
    expect(passed.headers.authorization).toBeUndefined();
  });
});
