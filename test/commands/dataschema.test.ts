import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, startTestGateway } from '../support/gateway.ts';
import { authorizePayment, exampleBackends, FAST_DISPATCH, ordersBackend, placeOrder, post, protoBackend, scriptedBackend, sendJson } from './support.ts';

afterEach(closeAll);

describe('a caller-supplied dataschema', () => {
  it('is never fetched, whatever it names (a trap server sees no request)', async () => {
    const trap = await scriptedBackend((_req, res) => sendJson(res, 200, { type: 'object' }));
    const { orders, payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${ordersBackend(orders.url)}${protoBackend(payments.url)}`));
    const urls = [`${trap.url}/commands/place-order/1.0`, `${trap.url}/schema.json`, `${trap.url}/commands/authorize-payment/1.0`];
    for (const dataschema of urls) {
      expect((await post(`${gw.url}commands`, placeOrder(undefined, { dataschema }))).body.error.code).toBe('DATASCHEMA_MISMATCH');
      expect((await post(`${gw.url}commands`, authorizePayment(undefined, { dataschema }))).body.error.code).toBe('DATASCHEMA_MISMATCH');
      expect((await post(`${gw.url}commands`, placeOrder(undefined, { dataschema, type: 'Unknown' }))).status).toBe(422);
    }
    // Accepted commands are delivered with the backend's own dataschema, not the caller's.
    expect((await post(`${gw.url}commands`, authorizePayment())).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(trap.received).toHaveLength(0);
  });

  it('reaches a proto backend replaced by the backend\'s own catalogue dataschema', async () => {
    const seen: unknown[] = [];
    const backend = await scriptedBackend((req, res) => {
      const path = req.url.split('?')[0];
      if (path === '/.well-known/proto') return sendJson(res, 404, {});
      if (path === '/commands' && req.method === 'GET') {
        return sendJson(res, 200, { commands: [{ schema: 'ping', version: '2', dataschema: 'http://internal.example/schemas/ping-2.json' }] });
      }
      if (path === '/commands/ping/2') return sendJson(res, 200, { type: 'object', produces: ['PongV1'] });
      if (path === '/commands' && req.method === 'POST') {
        seen.push(JSON.parse(req.body));
        return sendJson(res, 201, { id: JSON.parse(req.body).id });
      }
      sendJson(res, 404, {});
    });
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'pinger')}`));
    const command = { ...authorizePayment({}), type: 'Ping', dataschema: 'ping/2', traceparent: 'x' };
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(seen).toEqual([{ ...command, dataschema: 'http://internal.example/schemas/ping-2.json' }]);
  });
});
