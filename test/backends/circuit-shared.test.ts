import { afterEach, describe, expect, it } from 'vitest';
import { placeOrder, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { metricValue } from '../bridges/webhooks/support.ts';

afterEach(closeAll);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('one circuit per backend, shared by dispatch and queries', () => {
  it('a failing backend opens it for both (no calls while open); it closes when the backend is back', async () => {
    let down = true;
    const backend = await scriptedBackend((req, res) => {
      if (down) return sendJson(res, 503, { message: 'down for maintenance' });
      sendJson(res, req.method === 'POST' ? 201 : 200, { ok: true });
    });
    const gw = await startTestGateway(gatewayYaml(`commands: { dispatch: { timeout: 1s, retry: { schedule: [50ms, 50ms, 50ms, 50ms, 50ms, 50ms] } } }
backends:
  - id: shop
    kind: legacy
    url: ${backend.url}
    circuit: { failures: 2, cooldown: 1s }
    commands:
      - type: PlaceOrder
        jsonSchema: { type: object }
        request: { method: POST, path: /orders }
        events: { success: { type: OrderPlacedV1 } }
    queries:
      - schema: stock
        request: { path: /stock }
`));
    const command = placeOrder();
    await post(`${gw.url}commands`, command);
    await eventually(async () => (await getJson(`${gw.url}services/shop`)).body.status === 'error');
    expect(await metricValue(gw, 'proto_gateway_backend_circuit_state', { backend: 'shop' })).toBe(2);
    expect(await metricValue(gw, 'proto_gateway_backend_up', { backend: 'shop' })).toBe(0);
    const calls = backend.received.length;
    expect(calls).toBe(2);

    const refused = await getJson(`${gw.url}queries/stock`);
    expect(refused.status).toBe(503);
    expect(refused.body.error).toMatchObject({ code: 'BACKEND_UNAVAILABLE', details: { circuit: 'open' } });
    await sleep(300);
    expect(backend.received).toHaveLength(calls);

    down = false;
    await eventually(async () => (await getJson(`${gw.url}events?correlationId=${command.id}`)).body.events.length === 1, 5000);
    expect((await getJson(`${gw.url}events?correlationId=${command.id}`)).body.events[0].type).toBe('OrderPlacedV1');
    expect((await getJson(`${gw.url}services/shop`)).body.status).toBe('running');
    expect(await metricValue(gw, 'proto_gateway_backend_circuit_state', { backend: 'shop' })).toBe(0);
    expect((await getJson(`${gw.url}queries/stock`)).body).toEqual({ ok: true });
  });

  it('queries failing on a 5xx open it for dispatch too: a command waits until the probe succeeds', async () => {
    let down = true;
    const backend = await scriptedBackend((req, res) => {
      if (down) return sendJson(res, 500, { message: 'broken' });
      sendJson(res, req.method === 'POST' ? 201 : 200, { ok: true });
    });
    const gw = await startTestGateway(gatewayYaml(`commands: { dispatch: { timeout: 1s, retry: { schedule: [50ms, 50ms, 50ms] } } }
backends:
  - id: shop
    kind: legacy
    url: ${backend.url}
    circuit: { failures: 1, cooldown: 1s }
    commands:
      - type: PlaceOrder
        jsonSchema: { type: object }
        request: { method: POST, path: /orders }
        events: { success: { type: OrderPlacedV1 } }
    queries:
      - schema: stock
        request: { path: /stock }
`));
    expect((await getJson(`${gw.url}queries/stock`)).status).toBe(503);
    const command = placeOrder();
    await post(`${gw.url}commands`, command);
    await sleep(300);
    expect(backend.received.map((r) => r.method)).toEqual(['GET']);
    down = false;
    await eventually(async () => (await getJson(`${gw.url}events?correlationId=${command.id}`)).body.events.length === 1, 5000);
    expect(backend.received.map((r) => r.method)).toEqual(['GET', 'POST']);
  });
});
