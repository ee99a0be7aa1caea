import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { FAST_DISPATCH, exampleBackends, placeOrder, post, protoBackend, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir } from '../support/gateway.ts';
import { metricValue } from '../bridges/webhooks/support.ts';
import { send } from '../registry/support.ts';

afterEach(closeAll);

/** A legacy backend taking PlaceOrder at POST /orders, recording what it receives. */
async function shop() {
  const backend = await scriptedBackend((_req, res) => sendJson(res, 201, { id: 'ord-1' }));
  const yaml = (storage?: string) => gatewayYaml(`${FAST_DISPATCH}
backends:
  - id: shop
    kind: legacy
    url: ${backend.url}
    commands:
      - type: PlaceOrder
        jsonSchema: { type: object }
        request: { method: POST, path: /orders }
        events: { success: { type: OrderPlacedV1 } }
`, storage);
  return { backend, yaml };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('POST /services/{id}/pause and /resume', () => {
  it('a paused backend keeps accepted commands in the outbox; resume delivers them', async () => {
    const { backend, yaml } = await shop();
    const gw = await startTestGateway(yaml());
    expect((await send('POST', `${gw.url}services/shop/pause`)).status).toBe(204);
    expect((await getJson(`${gw.url}services/shop`)).body.status).toBe('paused');
    const command = placeOrder();
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    await sleep(1200);
    expect(backend.received).toHaveLength(0);
    expect(await metricValue(gw, 'proto_gateway_outbox_depth')).toBe(1);
    expect((await send('POST', `${gw.url}services/shop/resume`)).status).toBe(204);
    await eventually(async () => (await getJson(`${gw.url}events?correlationId=${command.id}`)).body.events.length === 1);
    expect(backend.received).toHaveLength(1);
    expect((await getJson(`${gw.url}services/shop`)).body.status).toBe('running');
    expect(await metricValue(gw, 'proto_gateway_registry_changes_total', { change: 'paused' })).toBe(1);
    expect(await metricValue(gw, 'proto_gateway_registry_changes_total', { change: 'resumed' })).toBe(1);
  });

  it('pauses ingestion of a proto backend; resume reads what it missed', async () => {
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`backends:\n${protoBackend(payments.url)}`));
    const seen = async (id: string) => (await getJson(`${gw.url}events?type=PaymentAuthorizedV1`)).body.events.some((e: { id: string }) => e.id === id);
    const early = payments.emit('PaymentAuthorizedV1', { orderId: 'o-1', amount: 1, currency: 'EUR' });
    await eventually(() => seen(early.id));
    await send('POST', `${gw.url}services/payments/pause`);
    const late = payments.emit('PaymentAuthorizedV1', { orderId: 'o-2', amount: 2, currency: 'EUR' });
    await sleep(600);
    expect(await seen(late.id)).toBe(false);
    await send('POST', `${gw.url}services/payments/resume`);
    await eventually(() => seen(late.id));
  });

  it('stays paused across a restart (sqlite): held commands are not delivered until resumed', async () => {
    const { backend, yaml } = await shop();
    const file = join(tempDir(), 'gateway.yaml');
    const storage = 'storage: { driver: sqlite, path: ./data/gateway.db }';
    const first = await startTestGateway(yaml(storage), {}, file);
    await send('POST', `${first.url}services/shop/pause`);
    const command = placeOrder();
    await post(`${first.url}commands`, command);
    await first.close();
    const second = await startTestGateway(yaml(storage), {}, file);
    expect((await getJson(`${second.url}services/shop`)).body.status).toBe('paused');
    await sleep(1200);
    expect(backend.received).toHaveLength(0);
    await send('POST', `${second.url}services/shop/resume`);
    await eventually(async () => backend.received.length === 1);
  });

  it('is idempotent; an unknown service is 404, a service without an endpoint 409', async () => {
    const { yaml } = await shop();
    const gw = await startTestGateway(yaml());
    expect((await send('POST', `${gw.url}services/shop/pause`)).status).toBe(204);
    expect((await send('POST', `${gw.url}services/shop/pause`)).status).toBe(204);
    expect(await metricValue(gw, 'proto_gateway_registry_changes_total', { change: 'paused' })).toBe(1);
    expect((await send('POST', `${gw.url}services/nope/pause`)).body.error.code).toBe('SERVICE_NOT_FOUND');
    await send('POST', `${gw.url}services`, { id: 'agent', name: 'com.test.agent' });
    const conflict = await send('POST', `${gw.url}services/agent/pause`);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('CONFLICT');
  });
});
