import { afterEach, describe, expect, it } from 'vitest';
import { exampleBackends, protoBackend } from '../commands/support.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { ordersQueryBackend } from './support.ts';

afterEach(closeAll);

async function gateway() {
  const { orders, payments } = await exampleBackends();
  const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersQueryBackend(orders.url)}${protoBackend(payments.url)}`));
  return { gw, orders, payments };
}

describe('GET /queries', () => {
  it('aggregates the legacy and proto catalogues with public dataschema URIs', async () => {
    const { gw } = await gateway();
    const { status, body } = await getJson(`${gw.url}queries`);
    expect(status).toBe(200);
    expect(body.queries).toEqual([
      { schema: 'list-orders', version: '1.0', dataschema: `${gw.url}queries/list-orders/1.0`, description: 'List orders, optionally of one status' },
      { schema: 'payment-status', version: '1.0', dataschema: `${gw.url}queries/payment-status/1.0`, description: 'The payment status of an order, from the events seen so far' },
    ]);
  });

  it('per service: only that backend\'s queries, with scoped URIs; an unknown service is 404', async () => {
    const { gw } = await gateway();
    const { body } = await getJson(`${gw.url}services/payments/queries`);
    expect(body.queries).toEqual([expect.objectContaining({ schema: 'payment-status', dataschema: `${gw.url}services/payments/queries/payment-status/1.0` })]);
    const unknown = await getJson(`${gw.url}services/nope/queries`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SERVICE_NOT_FOUND');
  });
});

describe('GET /queries/{schema}/{version}', () => {
  it('serves { description, parameters, response } of both kinds, with no backend address', async () => {
    const { gw, payments } = await gateway();
    const legacy = await getJson(`${gw.url}queries/list-orders/1.0`);
    expect(legacy.status).toBe(200);
    expect(legacy.body).toEqual({
      description: 'List orders, optionally of one status',
      parameters: { type: 'object', properties: { status: { type: 'string', enum: ['created', 'shipped'] } }, additionalProperties: false },
      response: { type: 'object' },
    });
    const proto = await getJson(`${gw.url}queries/payment-status/1.0`);
    expect(proto.body).toMatchObject({ parameters: { required: ['orderId'] }, response: { required: ['orderId', 'status'] } });
    expect(JSON.stringify(proto.body)).not.toContain(new URL(payments.url).host);
  });

  it('answers 404 UNKNOWN_SCHEMA for an unknown query or version, and per service for another backend\'s', async () => {
    const { gw } = await gateway();
    for (const path of ['queries/nope/1.0', 'queries/list-orders/9.9', 'services/payments/queries/list-orders/1.0', 'queries/nope']) {
      const { status, body } = await getJson(`${gw.url}${path}`);
      expect(status, path).toBe(404);
      expect(body.error.code, path).toBe('UNKNOWN_SCHEMA');
    }
  });
});

describe('the manifest', () => {
  it('declares io.proto.agents.queries with exactly its routes', async () => {
    const { gw } = await gateway();
    const { body } = await getJson(`${gw.url}.well-known/proto`);
    const capability = body.PROTO.capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.queries');
    expect(capability.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`)).toEqual([
      'GET /queries',
      'GET /queries/{schema}/{version}',
      'GET /queries/{schema}',
    ]);
  });
});
