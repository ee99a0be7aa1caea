import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleBackends, ordersBackend, protoBackend } from '../commands/support.ts';
import { closeAll, eventually, freePort, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { metricValue } from '../bridges/webhooks/support.ts';

afterEach(closeAll);

const validateDescriptor = new Ajv({ strict: false, validateFormats: false }).compile(JSON.parse(readFileSync(new URL('../../schemas/service-descriptor.json', import.meta.url), 'utf8')));

describe('GET /services', () => {
  it('describes every configured backend: public endpoint, accepts and produces from the catalogues, status', async () => {
    const { orders, payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersBackend(orders.url)}${protoBackend(payments.url)}`));
    const { status, body } = await getJson(`${gw.url}services`);
    expect(status).toBe(200);
    const [ordersEntry, paymentsEntry] = body.services;
    expect(ordersEntry).toEqual({
      id: 'orders', name: 'orders', type: 'legacy', endpoint: `${gw.url}services/orders/`,
      accepts: ['PlaceOrder'], produces: ['OrderPlacedV1', 'PlaceOrderFailedV1'], status: 'running',
    });
    expect(paymentsEntry).toMatchObject({
      id: 'payments', name: 'payments', type: 'proto', endpoint: `${gw.url}services/payments/`, status: 'running',
      description: expect.any(String), version: expect.stringMatching(/^\d+\.\d+\.\d+$/),
    });
    expect(paymentsEntry.accepts).toContain('AuthorizePayment');
    expect(paymentsEntry.produces).toContain('AuthorizePaymentFailedV1');
    expect(JSON.stringify(body)).not.toContain(new URL(payments.url).host);
    for (const descriptor of body.services) expect(validateDescriptor(descriptor), JSON.stringify(validateDescriptor.errors)).toBe(true);
  });

  it('GET /services/{id} is one descriptor, GET /agents the same list; an unknown id is 404 SERVICE_NOT_FOUND', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${ordersBackend(orders.url)}`));
    const list = (await getJson(`${gw.url}services`)).body.services;
    expect((await getJson(`${gw.url}services/orders`)).body).toEqual(list[0]);
    expect((await getJson(`${gw.url}agents`)).body).toEqual({ agents: list });
    const unknown = await getJson(`${gw.url}services/nope`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SERVICE_NOT_FOUND');
  });

  it('reports an unreachable proto backend as error, and running once it answers', async () => {
    const port = await freePort();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${protoBackend(`http://127.0.0.1:${port}`)}`));
    expect((await getJson(`${gw.url}services/payments`)).body.status).toBe('error');
    expect(await metricValue(gw, 'proto_gateway_backend_up', { backend: 'payments' })).toBe(0);
    const { startPaymentsService } = await import('../../examples/payments-service.ts');
    const { track } = await import('../support/gateway.ts');
    track(await startPaymentsService({ port }));
    await eventually(async () => (await getJson(`${gw.url}services/payments`)).body.status === 'running');
    expect(await metricValue(gw, 'proto_gateway_backend_up', { backend: 'payments' })).toBe(1);
  });

  it('the manifest declares the registry and lifecycle capabilities with exactly their routes', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const { body } = await getJson(`${gw.url}.well-known/proto`);
    const routes = (name: string) => body.PROTO.capabilities.find((c: { name: string }) => c.name === name);
    expect(routes('io.proto.agents.registry').endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`)).toEqual([
      'GET /services', 'GET /services/{id}', 'GET /agents', 'POST /services', 'DELETE /services/{id}',
    ]);
    expect(routes('io.proto.agents.lifecycle')).toMatchObject({ extends: 'io.proto.agents.registry' });
    expect(routes('io.proto.agents.lifecycle').endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`)).toEqual([
      'POST /services/{id}/pause', 'POST /services/{id}/resume',
    ]);
  });
});
