import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/gateway-config.ts';
import { closeAll, eventually, freePort, gatewayYaml, getJson, startTestGateway, tempDir } from '../support/gateway.ts';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { track } from '../support/gateway.ts';
import { authorizePayment, exampleBackends, FAST_DISPATCH, ordersBackend, post, protoBackend, scriptedBackend, sendJson } from './support.ts';
import { join } from 'node:path';

afterEach(closeAll);

describe('the command catalogue', () => {
  it('aggregates legacy and proto commands with public dataschemas only', async () => {
    const { orders, payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersBackend(orders.url)}${protoBackend(payments.url)}`));
    const { status, body } = await getJson(`${gw.url}commands`);
    expect(status).toBe(200);
    expect(body.commands).toEqual([
      { schema: 'place-order', version: '1.0', dataschema: `${gw.url}commands/place-order/1.0`, description: 'Place an order' },
      { schema: 'authorize-payment', version: '1.0', dataschema: `${gw.url}commands/authorize-payment/1.0`, description: expect.any(String) },
      { schema: 'refund-payment', version: '1.0', dataschema: `${gw.url}commands/refund-payment/1.0`, description: expect.any(String) },
    ]);
    expect(JSON.stringify(body)).not.toContain(payments.url);
    const scoped = await getJson(`${gw.url}services/payments/commands`);
    expect(scoped.body.commands.map((c: { dataschema: string }) => c.dataschema)).toEqual([
      `${gw.url}services/payments/commands/authorize-payment/1.0`,
      `${gw.url}services/payments/commands/refund-payment/1.0`,
    ]);
    expect((await getJson(`${gw.url}services/nobody/commands`)).body.error.code).toBe('SERVICE_NOT_FOUND');
  });

  it('serves each schema as application/schema+json with its public $id and produces', async () => {
    const { orders, payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersBackend(orders.url)}${protoBackend(payments.url)}`));
    const legacy = await getJson(`${gw.url}commands/place-order/1.0`);
    expect(legacy.headers.get('content-type')).toBe('application/schema+json');
    expect(legacy.body).toMatchObject({ $id: `${gw.url}commands/place-order/1.0`, type: 'object', required: ['sku', 'qty'], produces: ['OrderPlacedV1', 'PlaceOrderFailedV1'] });
    const proto = await getJson(`${gw.url}services/payments/commands/authorize-payment/1.0`);
    expect(proto.body).toMatchObject({ $id: `${gw.url}services/payments/commands/authorize-payment/1.0`, required: ['orderId', 'amount'] });
    expect(proto.body.produces).toEqual(expect.arrayContaining(['PaymentAuthorizedV1', 'PaymentDeclinedV1']));
    for (const url of [`${gw.url}commands/place-order/9.9`, `${gw.url}services/payments/commands/place-order/1.0`]) {
      const missing = await getJson(url);
      expect(missing.status).toBe(404);
      expect(missing.body.error.code).toBe('UNKNOWN_SCHEMA');
    }
  });

  it('teaches the event catalogue the produces lists', async () => {
    const { orders, payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersBackend(orders.url)}${protoBackend(payments.url)}`));
    const { body } = await getJson(`${gw.url}events/catalogue`);
    const names = body.events.map((e: { schema: string }) => e.schema);
    expect(names).toEqual(expect.arrayContaining(['order-placed', 'place-order-failed', 'payment-authorized', 'payment-declined', 'authorize-payment-failed']));
  });

  it('lists its routes in the io.proto.agents.commands capability', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const { body } = await getJson(`${gw.url}.well-known/proto`);
    const capability = body.PROTO.capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.commands');
    expect(capability).toMatchObject({ service: 'io.proto.agents', schema: `${gw.url}schemas/envelope.json` });
    expect(capability.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`).sort()).toEqual(['GET /commands', 'GET /commands/{schema}/{version}', 'POST /commands']);
  });

  it('a legacy type declared twice is a configuration error', async () => {
    const yaml = gatewayYaml(`backends:\n${ordersBackend('http://127.0.0.1:1', 'a')}${ordersBackend('http://127.0.0.1:2', 'b')}`);
    await expect(parseConfig(yaml, join(tempDir(), 'gateway.yaml'), {})).rejects.toThrow(/command type PlaceOrder is already declared/);
  });

  it('a proto type claimed twice: warned and counted, the first backend in the configuration wins', async () => {
    const first = track(await startPaymentsService({ port: 0 }));
    const second = track(await startPaymentsService({ port: 0 }));
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\nbackends:\n${protoBackend(first.url, 'pay-a')}${protoBackend(second.url, 'pay-b')}`));
    expect((await getJson(`${gw.url}commands`)).body.commands).toHaveLength(2);
    expect((await getJson(`${gw.url}services/pay-b/commands`)).body.commands).toEqual([]);
    const metrics = await (await fetch(`${gw.url}metrics`)).text();
    expect(metrics).toMatch(/proto_gateway_command_type_conflicts\{backend="pay-b"\} 2/);
    expect(metrics).toMatch(/proto_gateway_command_type_conflicts\{backend="pay-a"\} 0/);
    const command = authorizePayment();
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    await eventually(() => first.events.some((e) => e.correlationid === command.id));
    expect(second.events).toEqual([]);
  });

  it('follows a proto backend: down at start, then up, then changing its catalogue (refresh)', async () => {
    const port = await freePort();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${protoBackend(`http://127.0.0.1:${port}`, 'late')}`));
    expect((await getJson(`${gw.url}commands`)).body.commands).toEqual([]);
    const catalogue = [{ schema: 'ping', version: '1' }];
    await scriptedBackend((req, res) => {
      const path = req.url.split('?')[0];
      if (path === '/commands') return sendJson(res, 200, { commands: catalogue });
      const match = /^\/commands\/([^/]+)\/([^/]+)$/.exec(path);
      if (match) return sendJson(res, 200, { type: 'object', required: [match[1]] });
      sendJson(res, 404, {});
    }, port);
    await eventually(async () => (await getJson(`${gw.url}commands`)).body.commands.length === 1, 5000);
    catalogue.push({ schema: 'pong', version: '1' });
    const both = await eventually(async () => {
      const { body } = await getJson(`${gw.url}commands`);
      return body.commands.length === 2 ? body.commands : undefined;
    }, 5000);
    expect(both.map((c: { schema: string }) => c.schema)).toEqual(['ping', 'pong']);
    const invalid = await post(`${gw.url}commands`, { ...authorizePayment({}), type: 'Pong', dataschema: 'pong/1' });
    expect(invalid.body.error).toMatchObject({ code: 'VALIDATION_FAILED', details: { errors: [{ path: '/pong', message: expect.any(String) }] } });
  });
});
