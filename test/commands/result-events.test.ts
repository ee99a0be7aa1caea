import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir } from '../support/gateway.ts';
import { authorizePayment, exampleBackends, FAST_DISPATCH, ordersBackend, ownIdBackend, placeOrder, post, protoBackend, scriptedBackend, sendJson } from './support.ts';

afterEach(closeAll);

/** The events correlated with `id`, once there are `count` of them. */
async function correlated(base: string, id: string, count = 1) {
  return eventually(async () => {
    const { body } = await getJson(`${base}events?correlationId=${encodeURIComponent(id)}`);
    return body.events.length >= count ? body.events : undefined;
  });
}

describe('result events of legacy commands', () => {
  it('a success event carries the correlation id, the backend source and the mapped response', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${ordersBackend(orders.url)}`));
    const command = placeOrder({ sku: 'widget', qty: 3 });
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    const [event] = await correlated(gw.url, command.id as string);
    expect(event).toMatchObject({
      specversion: '1.0',
      type: 'OrderPlacedV1',
      source: 'urn:test:orders',
      correlationid: command.id,
      datacontenttype: 'application/json',
      data: { sku: 'widget', qty: 3, total: 37.5, requestId: command.id },
    });
    expect(event.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(event.dataschema).toBeUndefined();
  });

  it('a 4xx answer gives the failure event at once, without retrying (orders: sku fail-x is 422)', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${ordersBackend(orders.url)}`));
    const command = placeOrder({ sku: 'fail-x', qty: 1 });
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    const [event] = await correlated(gw.url, command.id as string);
    expect(event).toMatchObject({
      type: 'PlaceOrderFailedV1',
      source: 'urn:test:orders',
      correlationid: command.id,
      data: { error: { code: 'COMMAND_NOT_ACCEPTED', message: 'out of stock', status: 422 } },
    });
    const metrics = await (await fetch(`${gw.url}metrics`)).text();
    expect(metrics).toMatch(/proto_gateway_command_failures_total\{backend="orders"\} 1/);
    expect(metrics).not.toMatch(/proto_gateway_command_retries_total\{backend="orders"\}/);
  });
});

describe('result events of proto commands', () => {
  it('the payments backend\'s own events are found by the command id', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(payments.url)}`));
    const command = authorizePayment({ orderId: 'ord-9', amount: 25, currency: 'EUR' });
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    const [event] = await correlated(gw.url, command.id as string);
    expect(event).toMatchObject({ type: 'PaymentAuthorizedV1', correlationid: command.id, data: { orderId: 'ord-9', amount: 25 } });
    // Stored as received, with the backend's address rewritten to its public form.
    expect(event.source).toBe(`${gw.url}services/payments/`);
    expect(payments.events.find((e) => e.correlationid === command.id)?.id).toBe(event.id);
  });

  it('a backend answering with another id: warned, remembered durably, its events found by the gateway id', async () => {
    const backend = await ownIdBackend('PaymentAuthorizedV1');
    const dir = tempDir();
    const yaml = gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'odd')}`, `storage: { driver: sqlite, path: ${join(dir, 'gw.db')} }`);
    const gw = await startTestGateway(yaml);
    const command = authorizePayment();
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    const [event] = await correlated(gw.url, command.id as string);
    expect(event).toMatchObject({ id: `evt-own-${command.id}`, correlationid: `own-${command.id}` });
    await gw.close();

    const again = await startTestGateway(yaml);
    const { body } = await getJson(`${again.url}events?correlationId=${command.id}`);
    expect(body.events.map((e: { id: string }) => e.id)).toEqual([`evt-own-${command.id}`]);
    expect((await getJson(`${again.url}events?correlationId=own-${command.id}`)).body.events).toHaveLength(1);
  });

  it('a proto backend that refuses the command: the gateway emits <CommandType>FailedV1', async () => {
    const backend = await scriptedBackend((req, res) => {
      const path = req.url.split('?')[0];
      if (path === '/commands' && req.method === 'GET') return sendJson(res, 200, { commands: [{ schema: 'authorize-payment', version: '1.0' }] });
      if (path === '/commands/authorize-payment/1.0') return sendJson(res, 200, { type: 'object' });
      if (path === '/commands') return sendJson(res, 400, { error: { code: 'VALIDATION_FAILED', message: 'no such order' } });
      sendJson(res, 404, {});
    });
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(backend.url, 'strict')}`));
    const command = authorizePayment();
    await post(`${gw.url}commands`, command);
    const [event] = await correlated(gw.url, command.id as string);
    expect(event).toMatchObject({
      type: 'AuthorizePaymentFailedV1',
      source: 'urn:test:strict',
      correlationid: command.id,
      data: { error: { code: 'VALIDATION_FAILED', message: 'no such order', status: 400 } },
    });
    expect(backend.received.filter((r) => r.method === 'POST')).toHaveLength(1);
  });
});
