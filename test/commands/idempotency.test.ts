import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { envelope, FAST_DISPATCH, placeOrder, post, scriptedBackend, sendJson, ordersBackend } from './support.ts';

afterEach(closeAll);

const auth = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }`;
const alice = { 'x-api-key': 'alice-key' };
const bob = { 'x-api-key': 'bob-key' };

/** A legacy backend that counts the orders it receives, and a gateway in front of it. */
async function gatewayWithCountingBackend(extra = '') {
  const backend = await scriptedBackend((req, res) => sendJson(res, 201, { id: `ord-${req.headers['x-request-id']}` }));
  const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\n${auth}\n${extra}\nbackends:\n${ordersBackend(backend.url)}`));
  return { gw, backend };
}

describe('idempotency by command id, per principal', () => {
  it('replays the first answer to the same command and delivers it once', async () => {
    const { gw, backend } = await gatewayWithCountingBackend();
    const command = placeOrder();
    const first = await post(`${gw.url}commands`, command, alice);
    // A retry with a new time (not part of the fingerprint) and another key order is the same command.
    const { data, ...rest } = command;
    const again = await post(`${gw.url}commands`, { data, ...rest, time: new Date(Date.now() + 5000).toISOString() }, alice);
    const relative = await post(`${gw.url}commands`, { ...command, dataschema: `${gw.url}commands/place-order/1.0` }, alice);
    expect(first).toMatchObject({ status: 201, body: { id: command.id } });
    expect(again).toMatchObject({ status: 201, body: { id: command.id } });
    expect(relative).toMatchObject({ status: 201, body: { id: command.id } });
    await eventually(async () => (await getJson(`${gw.url}events?correlationId=${command.id}`, { headers: alice })).body.events.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(backend.received.filter((r) => r.headers['x-request-id'] === command.id)).toHaveLength(1);
    const metrics = await (await fetch(`${gw.url}metrics`, { headers: alice })).text();
    expect(metrics).toMatch(/proto_gateway_commands_total\{type="PlaceOrder",outcome="replayed"\} 2/);
  });

  it('409 DUPLICATE_COMMAND for the same id with another payload', async () => {
    const { gw } = await gatewayWithCountingBackend();
    const command = placeOrder({ sku: 'a', qty: 1 });
    expect((await post(`${gw.url}commands`, command, alice)).status).toBe(201);
    for (const changed of [{ data: { sku: 'a', qty: 2 } }, { source: 'urn:test:other' }]) {
      const res = await post(`${gw.url}commands`, { ...command, ...changed }, alice);
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ error: { code: 'DUPLICATE_COMMAND', message: expect.any(String), details: { id: command.id } } });
    }
  });

  it('409 DUPLICATE_COMMAND for an id already used by another principal, even with the same payload', async () => {
    const { gw, backend } = await gatewayWithCountingBackend();
    const command = placeOrder();
    expect((await post(`${gw.url}commands`, command, alice)).status).toBe(201);
    const res = await post(`${gw.url}commands`, command, bob);
    expect(res.status).toBe(409);
    expect(res.body.error.code).toBe('DUPLICATE_COMMAND');
    await eventually(() => backend.received.length === 1);
  });

  it('of concurrent identical submissions, enqueues one and answers all the same', async () => {
    const { gw, backend } = await gatewayWithCountingBackend();
    const command = placeOrder();
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(`${gw.url}commands`, command, alice)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(201));
    await eventually(() => backend.received.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(backend.received).toHaveLength(1);
  });

  it('lets an id be used again after commands.idempotencyWindow', async () => {
    const { gw, backend } = await gatewayWithCountingBackend('');
    await gw.close();
    const short = await startTestGateway(gatewayYaml(`commands: { idempotencyWindow: 300ms, dispatch: { timeout: 1s } }\n${auth}\nbackends:\n${ordersBackend(backend.url)}`));
    const command = envelope('PlaceOrder', 'place-order/1.0', { sku: 'a', qty: 1 });
    expect((await post(`${short.url}commands`, command, alice)).status).toBe(201);
    expect((await post(`${short.url}commands`, { ...command, data: { sku: 'b', qty: 1 } }, alice)).status).toBe(409);
    await new Promise((resolve) => setTimeout(resolve, 350));
    expect((await post(`${short.url}commands`, { ...command, data: { sku: 'b', qty: 1 } }, bob)).status).toBe(201);
  });
});
