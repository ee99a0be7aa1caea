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
