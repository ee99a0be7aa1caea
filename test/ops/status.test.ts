import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, freePort, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { appendEvents, startReceiver, subscribe, tableResolver, webhooksYaml } from '../bridges/webhooks/support.ts';
import { exampleBackends, FAST_DISPATCH, ordersBackend, placeOrder, post, protoBackend, scriptedBackend, sendJson } from '../commands/support.ts';

afterEach(closeAll);

const auth = `auth:
  type: apiKey
  keys:
    - { id: ops, key: ops-key, scopes: [read, write, admin] }
    - { id: writer, key: write-key, scopes: [write] }`;
const ops = { 'X-Api-Key': 'ops-key' };

describe('GET /status', () => {
  it('shows each backend, its outbox, and counters that move with the traffic', async () => {
    const { orders, payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${auth}\n${FAST_DISPATCH}\nbackends:\n${ordersBackend(orders.url)}\n${protoBackend(payments.url)}`));
    const status = async () => (await getJson(`${gw.url}status`, { headers: ops })).body;

    const before = await status();
    expect(before.gateway).toMatchObject({ storage: 'memory', uptimeSeconds: expect.any(Number), version: expect.any(String) });
    const lag = expect.toSatisfy((v: unknown) => v === null || typeof v === 'number');
    expect(before.backends).toEqual([
      { id: 'orders', kind: 'legacy', status: 'running', circuit: { state: 'closed' }, ingest: { lagSeconds: lag }, outbox: { depth: 0 }, lastError: null },
      { id: 'payments', kind: 'proto', status: 'running', circuit: { state: 'closed' }, ingest: { lagSeconds: lag }, outbox: { depth: 0 }, lastError: null },
    ]);
    expect(before.counters.commandsAccepted).toBe(0);

    // A paused backend holds its accepted commands in the outbox.
    expect((await fetch(`${gw.url}services/orders/pause`, { method: 'POST', headers: ops })).status).toBe(204);
    for (let i = 0; i < 3; i += 1) expect((await post(`${gw.url}commands`, placeOrder(), ops)).status).toBe(201);
    const paused = await status();
    expect(paused.backends[0]).toMatchObject({ id: 'orders', status: 'paused', outbox: { depth: 3 } });
    expect(paused.backends[1]).toMatchObject({ id: 'payments', outbox: { depth: 0 } });
    expect(paused.counters.commandsAccepted).toBe(3);
    expect(paused.commandLatency.count).toBe(3);
    const buckets = paused.commandLatency.buckets as Array<[number | string, number]>;
    expect(buckets.at(-1)).toEqual(['+Inf', 3]);
    expect(buckets.map(([le]) => le).slice(0, -1)).toEqual([...buckets.map(([le]) => le).slice(0, -1)].sort((a, b) => Number(a) - Number(b)));

    // Resumed, the commands are delivered and their result events appended.
    expect((await fetch(`${gw.url}services/orders/resume`, { method: 'POST', headers: ops })).status).toBe(204);
    const after = await eventually(async () => {
      const s = await status();
      return s.backends[0].outbox.depth === 0 && s.counters.eventsAppended >= 3 ? s : undefined;
    });
    expect(after.backends[0].status).toBe('running');
    expect(after.counters.httpRequests).toBeGreaterThan(before.counters.httpRequests);
  });

  it('reports an unreachable proto backend as error with its last error, and needs read', async () => {
    const gw = await startTestGateway(gatewayYaml(`${auth}\nbackends:\n${protoBackend('http://127.0.0.1:9', 'ghost')}`));
    const { body } = await getJson(`${gw.url}status`, { headers: ops });
    expect(body.backends).toMatchObject([{ id: 'ghost', kind: 'proto', status: 'error', lastError: 'the backend is unavailable (ECONNREFUSED)' }]);
    expect((await getJson(`${gw.url}status`)).status).toBe(401);
    expect((await getJson(`${gw.url}status`, { headers: { 'X-Api-Key': 'write-key' } })).status).toBe(403);
  });

  it("shows a legacy backend's failed record polls as its last error, without its address, until a poll succeeds", async () => {
    const port = await freePort();
    const stock = `  - id: stock
    kind: legacy
    url: http://127.0.0.1:${port}
    records:
      - path: /stock
        interval: 50ms
        types: [StockChangedV1]
        items: "items"
        event: { type: StockChangedV1, id: "{sku}" }
`;
    const gw = await startTestGateway(gatewayYaml(`${auth}\nbackends:\n${stock}`));
    const lastError = async () => (await getJson(`${gw.url}status`, { headers: ops })).body.backends[0].lastError as string | null;

    const failed = await eventually(lastError);
    expect(failed).toBe('GET /stock: the backend is unavailable (ECONNREFUSED)');
    expect(failed).not.toMatch(/127\.0\.0\.1|localhost/);
    expect(failed).not.toContain(String(port));

    // The backend comes up on that address: the next poll succeeds and clears the error.
    await scriptedBackend((_req, res) => sendJson(res, 200, { items: [] }), port);
    await eventually(async () => (await lastError()) === null);
  });

  it('counts webhook deliveries by status and the deliveries that ended', async () => {
    const gw = await startTestGateway(gatewayYaml(webhooksYaml('[]')), {}, undefined, { resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }) });
    const receiver = await startReceiver((_req, n) => ({ status: n === 1 ? 204 : 500 }));
    await subscribe(gw, { webhook: { url: receiver.url() } });
    await appendEvents(gw, 'OrderPlacedV1', 'OrderPlacedV1');
    const body = await eventually(async () => {
      const s = (await getJson(`${gw.url}status`)).body;
      return s.counters.webhookDeliveries === 2 ? s : undefined;
    });
    expect(body.webhooks).toEqual({ deliveries: { pending: 0, 'in-flight': 0, succeeded: 1, dead: 1 } });
  });
});
