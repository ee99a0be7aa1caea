import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, startTestGateway } from '../support/gateway.ts';
import { envelope, FAST_DISPATCH, post, scriptedBackend, sendJson } from './support.ts';

afterEach(closeAll);

describe('legacy request paths', () => {
  it('encodes placeholder values, so command data cannot steer the request to another path (regression)', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 200, { ok: true }));
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}
backends:
  - id: shop
    kind: legacy
    url: "${backend.url}/api"
    commands:
      - type: CancelOrder
        version: "1.0"
        jsonSchema: { type: object, required: [id], properties: { id: { type: string } } }
        request: { method: POST, path: "/orders/{data.id}/cancel" }`));
    const hostile = '../../admin/delete?all=1#';
    const { status } = await post(`${gw.url}commands`, envelope('CancelOrder', 'cancel-order/1.0', { id: hostile }));
    expect(status).toBe(201);
    await eventually(() => backend.received.length === 1);
    expect(backend.received[0].url).toBe(`/api/orders/${encodeURIComponent(hostile)}/cancel`);
  });
});

describe('legacy path templates cannot leave their path (regression: dot segments)', () => {
  const HOSTILE = ['..', '.', '', '%2e%2e', '.%2E', '%2E'];

  async function tenantGateway(backendUrl: string) {
    return startTestGateway(gatewayYaml(`${FAST_DISPATCH}
backends:
  - id: shop
    kind: legacy
    url: "${backendUrl}/api"
    commands:
      - type: CancelOrder
        version: "1.0"
        jsonSchema: { type: object, required: [tenant, orderId], properties: { tenant: { type: string }, orderId: { type: string } } }
        request: { method: POST, path: "/tenants/{data.tenant}/orders/{data.orderId}/cancel" }
    queries:
      - schema: order
        parameters: { type: object, required: [tenant, orderId], properties: { tenant: { type: string }, orderId: { type: string } } }
        request: { method: GET, path: "/tenants/{params.tenant}/orders/{params.orderId}" }`));
  }

  it('refuses a command whose placeholder is empty, "." or ".." (also encoded) with 400 VALIDATION_FAILED, and calls nothing', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 200, { ok: true }));
    const gw = await tenantGateway(backend.url);
    for (const value of HOSTILE) {
      for (const data of [{ tenant: value, orderId: '7' }, { tenant: 'acme', orderId: value }]) {
        const { status, body } = await post(`${gw.url}commands`, envelope('CancelOrder', 'cancel-order/1.0', data));
        expect(status, JSON.stringify(data)).toBe(400);
        expect(body.error.code).toBe('VALIDATION_FAILED');
        expect(body.error.details.errors[0].message).toMatch(/segment/);
      }
    }
    // A dot inside a value is no dot segment: it is sent, encoded.
    const { status } = await post(`${gw.url}commands`, envelope('CancelOrder', 'cancel-order/1.0', { tenant: 'a..b', orderId: '...' }));
    expect(status).toBe(201);
    await eventually(() => backend.received.length === 1);
    expect(backend.received.map((r) => r.url)).toEqual(['/api/tenants/a..b/orders/.../cancel']);
  });

  it('refuses a query whose placeholder is empty, "." or ".." with 400 INVALID_PARAMETER, and calls nothing', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 200, { ok: true }));
    const gw = await tenantGateway(backend.url);
    for (const value of HOSTILE) {
      const res = await fetch(`${gw.url}queries/order?tenant=${encodeURIComponent(value)}&orderId=7`);
      expect(res.status, value).toBe(400);
      expect((await res.json()).error.code).toBe('INVALID_PARAMETER');
    }
    expect(backend.received).toEqual([]);
    expect((await fetch(`${gw.url}queries/order?tenant=acme&orderId=7`)).status).toBe(200);
    expect(backend.received.map((r) => r.url)).toEqual(['/api/tenants/acme/orders/7']);
  });
});
