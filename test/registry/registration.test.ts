import { afterEach, describe, expect, it } from 'vitest';
import { authorizePayment, exampleBackends, ordersBackend, post, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { metricValue, subscribe, tableResolver, webhooksYaml } from '../bridges/webhooks/support.ts';
import { ADMIN_AUTH, LOOPBACK_REGISTRY, send } from './support.ts';

afterEach(closeAll);

describe('POST /services with an endpoint', () => {
  it('makes a runtime proto backend: descriptor, manifest, catalogue, pass-through, queries, ingestion', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(LOOPBACK_REGISTRY));
    const created = await send('POST', `${gw.url}services`, { id: 'pay', name: 'com.example.payments', endpoint: payments.url, metadata: { team: 'billing' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ id: 'pay', name: 'com.example.payments', type: 'proto', endpoint: `${gw.url}services/pay/`, status: 'running', metadata: { team: 'billing' } });
    expect(created.body.accepts).toContain('AuthorizePayment');
    expect(JSON.stringify(created.body)).not.toContain(new URL(payments.url).host);
    const manifest = (await getJson(`${gw.url}.well-known/proto`)).body;
    expect(manifest.PROTO.services['com.example.payments'].http.endpoint).toBe(`${gw.url}services/pay/`);
    expect((await getJson(`${gw.url}services/pay/commands`)).body.commands.length).toBeGreaterThan(0);
    expect((await getJson(`${gw.url}services/pay/refunds`)).body).toEqual({ refunds: [] });
    expect((await getJson(`${gw.url}queries/payment-status?orderId=o-1`)).body).toEqual({ orderId: 'o-1', status: 'unknown' });
    const event = payments.emit('PaymentAuthorizedV1', { orderId: 'o-2', amount: 5, currency: 'EUR' });
    await eventually(async () => (await getJson(`${gw.url}events?type=PaymentAuthorizedV1`)).body.events.some((e: { id: string }) => e.id === event.id));
    expect(await metricValue(gw, 'proto_gateway_registry_changes_total', { change: 'created' })).toBe(1);
  });

  it('upserts: a second POST of the id answers 200 with the updated descriptor', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(LOOPBACK_REGISTRY));
    await send('POST', `${gw.url}services`, { id: 'pay', name: 'com.example.payments', endpoint: payments.url });
    const updated = await send('POST', `${gw.url}services`, { id: 'pay', name: 'com.example.payments', endpoint: payments.url, description: 'Payments, registered', version: '2.0.0' });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id: 'pay', description: 'Payments, registered', version: '2.0.0', status: 'running' });
    expect((await getJson(`${gw.url}services`)).body.services.map((s: { id: string }) => s.id)).toEqual(['pay']);
    expect(await metricValue(gw, 'proto_gateway_registry_changes_total', { change: 'updated' })).toBe(1);
  });

  it('is refused by default (no registry.allowNetworks), without any connection to the endpoint', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 200, {}));
    const gw = await startTestGateway(gatewayYaml());
    const refused = await send('POST', `${gw.url}services`, { id: 'x', name: 'x', endpoint: backend.url });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'SERVICE_ENDPOINT_REJECTED', details: { reason: 'address' } });
    expect(backend.received).toHaveLength(0);
    expect((await getJson(`${gw.url}services/x`)).status).toBe(404);
  });

  it('is refused when the host resolves outside registry.allowNetworks (injected resolver), without any connection', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 200, {}));
    const resolver = tableResolver({ 'svc.test': ['127.0.0.1'], 'inside.test': ['10.1.2.3'] });
    const gw = await startTestGateway(gatewayYaml('registry: { allowNetworks: [10.0.0.0/8] }'), {}, undefined, { resolver });
    const port = new URL(backend.url).port;
    const refused = await send('POST', `${gw.url}services`, { id: 'x', name: 'x', endpoint: `http://svc.test:${port}/` });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toMatchObject({ code: 'SERVICE_ENDPOINT_REJECTED', details: { reason: 'address' } });
    expect(resolver.calls).toEqual(['svc.test']);
    expect(backend.received).toHaveLength(0);
    const unresolvable = await send('POST', `${gw.url}services`, { id: 'y', name: 'y', endpoint: 'http://nowhere.test/' });
    expect(unresolvable.body.error.details).toEqual({ reason: 'unresolvable' });
  });

  it('refuses a malformed body with 400 INVALID_PARAMETER naming the field (status cannot be registered)', async () => {
    const gw = await startTestGateway(gatewayYaml(LOOPBACK_REGISTRY));
    for (const [body, parameter] of [
      [{ id: 'Bad_Id', name: 'x' }, 'id'],
      [{ id: 'ok' }, 'name'],
      [{ id: 'ok', name: 'x', status: 'running' }, 'status'],
      [{ id: 'ok', name: 'x', accepts: ['not pascal'] }, 'accepts[0]'],
      [{ id: 'ok', name: 'x', metadata: [1] }, 'metadata'],
    ] as const) {
      const { status, body: answer } = await send('POST', `${gw.url}services`, body);
      expect(status, parameter).toBe(400);
      expect(answer.error, parameter).toMatchObject({ code: 'INVALID_PARAMETER', details: { parameter } });
    }
  });
});

describe('POST /services without an endpoint', () => {
  it('is a stopped registry entry with its declared types, not routed to, that can own subscriptions', async () => {
    const gw = await startTestGateway(gatewayYaml(webhooksYaml()));
    const created = await send('POST', `${gw.url}services`, { id: 'agent-7', name: 'com.test.agent', type: 'agent', accepts: ['DoThing'], produces: ['ThingDoneV1'] });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: 'agent-7', name: 'com.test.agent', type: 'agent', accepts: ['DoThing'], produces: ['ThingDoneV1'], status: 'stopped' });
    expect((await getJson(`${gw.url}services/agent-7/commands`)).status).toBe(404);
    const subscription = await subscribe(gw, { serviceId: 'agent-7', webhook: { url: 'http://127.0.0.1:9/hook' } });
    expect(subscription.status).toBe(201);
    expect((await subscribe(gw, { serviceId: 'nobody', webhook: { url: 'http://127.0.0.1:9/hook' } })).status).toBe(404);
  });
});

describe('DELETE /services/{id}', () => {
  it('removes a runtime service: 204, its subscriptions, ingestors, catalogue entries and manifest entry go', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${LOOPBACK_REGISTRY}\n${webhooksYaml()}`));
    await send('POST', `${gw.url}services`, { id: 'pay', name: 'com.example.payments', endpoint: payments.url });
    const linked = await subscribe(gw, { serviceId: 'pay', webhook: { url: 'http://127.0.0.1:9/linked' } });
    const standalone = await subscribe(gw, { webhook: { url: 'http://127.0.0.1:9/standalone' } });
    expect(gw.ingestors.has('pay')).toBe(true);
    const deleted = await send('DELETE', `${gw.url}services/pay`);
    expect(deleted.status).toBe(204);
    expect((await getJson(`${gw.url}services/pay`)).status).toBe(404);
    expect((await getJson(`${gw.url}subscriptions/${linked.body.id}`)).status).toBe(404);
    expect((await getJson(`${gw.url}subscriptions/${standalone.body.id}`)).status).toBe(200);
    expect(gw.ingestors.has('pay')).toBe(false);
    expect((await getJson(`${gw.url}commands`)).body.commands).toEqual([]);
    expect((await getJson(`${gw.url}queries`)).body.queries).toEqual([]);
    expect((await getJson(`${gw.url}events/catalogue`)).body.events).toEqual([]);
    expect(JSON.stringify((await getJson(`${gw.url}.well-known/proto`)).body)).not.toContain('services/pay/');
    expect((await getJson(`${gw.url}services/pay/refunds`)).status).toBe(404);
    expect((await send('DELETE', `${gw.url}services/pay`)).body.error.code).toBe('SERVICE_NOT_FOUND');
  });
});

describe('commands of a removed service', () => {
  it('fail with <Type>FailedV1 SERVICE_NOT_FOUND and leave the outbox, retries scheduled for later included', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(LOOPBACK_REGISTRY));
    await send('POST', `${gw.url}services`, { id: 'pay', name: 'com.example.payments', endpoint: payments.url });
    expect((await send('POST', `${gw.url}services/pay/pause`)).status).toBe(204);
    const held = [authorizePayment(), authorizePayment()];
    for (const command of held) expect((await post(`${gw.url}services/pay/commands`, command)).status).toBe(201);
    // One of them waits for a retry an hour away: it must end too.
    const [first] = await gw.commandStore.claimDue('pay', Date.now(), 1, 60_000);
    await gw.commandStore.reschedule(first.seq, 1, Date.now() + 3_600_000, 'BACKEND_UNAVAILABLE: down');
    expect(await gw.commandStore.depth('pay')).toBe(2);
    expect((await send('DELETE', `${gw.url}services/pay`)).status).toBe(204);
    for (const command of held) {
      const { body } = await getJson(`${gw.url}events?correlationId=${command.id}`);
      expect(body.events).toHaveLength(1);
      expect(body.events[0]).toMatchObject({ type: 'AuthorizePaymentFailedV1', source: 'urn:proto-gateway:pay', data: { error: { code: 'SERVICE_NOT_FOUND' } } });
    }
    expect(await gw.commandStore.depth()).toBe(0);
    expect(payments.events.filter((event) => held.some((command) => command.id === event.correlationid))).toEqual([]);
  });
});

describe('configured services', () => {
  it('cannot be registered over or deleted: 409 CONFLICT', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${LOOPBACK_REGISTRY}\nbackends:\n${ordersBackend(orders.url)}`));
    const posted = await send('POST', `${gw.url}services`, { id: 'orders', name: 'mine now', endpoint: orders.url });
    expect(posted.status).toBe(409);
    expect(posted.body.error.code).toBe('CONFLICT');
    const deleted = await send('DELETE', `${gw.url}services/orders`);
    expect(deleted.status).toBe(409);
    expect((await getJson(`${gw.url}services/orders`)).body.status).toBe('running');
  });
});

describe('scopes', () => {
  it('registry changes need admin: 403 otherwise, 401 without a key; reads need read', async () => {
    const gw = await startTestGateway(gatewayYaml(`${ADMIN_AUTH}\n${LOOPBACK_REGISTRY}`));
    const entry = { id: 'agent', name: 'com.test.agent' };
    expect((await send('POST', `${gw.url}services`, entry)).status).toBe(401);
    const forbidden = await send('POST', `${gw.url}services`, entry, 'rw-key');
    expect(forbidden.status).toBe(403);
    expect(forbidden.body.error).toMatchObject({ code: 'FORBIDDEN', details: { scope: 'admin' } });
    expect((await send('POST', `${gw.url}services`, entry, 'admin-key')).status).toBe(201);
    expect((await send('GET', `${gw.url}services`, undefined, 'rw-key')).status).toBe(200);
    for (const path of ['services/agent/pause', 'services/agent/resume']) expect((await send('POST', `${gw.url}${path}`, undefined, 'rw-key')).status, path).toBe(403);
    expect((await send('DELETE', `${gw.url}services/agent`, undefined, 'rw-key')).status).toBe(403);
    expect((await send('DELETE', `${gw.url}services/agent`, undefined, 'admin-key')).status).toBe(204);
  });
});
