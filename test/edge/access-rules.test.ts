/**
 * Per-caller catalogues (`access` on backends, commands and queries): a caller sees and uses only
 * what it may; anything hidden answers exactly as something that does not exist. Callers are
 * tokens of a real OpenID provider whose realm roles (a nested claim) both grant gateway scopes and
 * open restricted entries; API keys match by their scopes.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';
import { startTestIdp, type TestClient } from '../support/oidc-provider.ts';

afterEach(closeAll);

const clerk: TestClient = { id: 'clerk', secret: 'clerk-secret', scope: 'openid', roles: ['gateway-user'] };
const manager: TestClient = { id: 'manager', secret: 'manager-secret', scope: 'openid', roles: ['gateway-user', 'orders-admin'] };

async function setup() {
  const provider = track(await startTestIdp([clerk, manager]));
  const gw = await startTestGateway(gatewayYaml(`auth:
  type: oauth2
  keys: [{ id: ops, key: ops-key, scopes: [read, write, admin] }]
  oauth2:
    issuer: ${provider.issuer}
    audience: proto-gateway
    scopeClaim: realm_access.roles
    scopeMap: { gateway-user: [read, write] }
backends:
  - id: shop
    kind: legacy
    url: http://127.0.0.1:9
    commands:
      - { type: PlaceOrder, jsonSchema: { type: object }, request: { path: /orders } }
      - { type: CancelAllOrders, access: [orders-admin, admin], jsonSchema: { type: object }, request: { path: /orders/cancel } }
    queries:
      - { schema: list-orders, request: { path: /orders } }
      - { schema: order-audit, access: [orders-admin], request: { path: /audit } }
  - id: vault
    kind: legacy
    url: http://127.0.0.1:9
    access: [orders-admin]
    commands:
      - { type: OpenVault, jsonSchema: { type: object }, request: { path: /open } }
`));
  const as = async (client: TestClient) => ({ authorization: `Bearer ${await provider.token(client, 'openid')}` });
  return { gw, clerk: await as(clerk), manager: await as(manager), ops: { 'x-api-key': 'ops-key' } };
}

function send(gw: { url: string }, headers: Record<string, string>, type: string, schema: string) {
  return getJson(`${gw.url}commands`, {
    method: 'POST',
    headers: { ...headers, 'content-type': 'application/json' },
    body: JSON.stringify({ specversion: '1.0', id: crypto.randomUUID(), source: 'urn:test', type, time: new Date().toISOString(), datacontenttype: 'application/json', dataschema: `${gw.url}commands/${schema}/1.0`, data: {} }),
  });
}

describe('per-caller catalogues (access)', () => {
  it('GET /commands and /queries list only what the caller may use', async () => {
    const { gw, clerk, manager, ops } = await setup();
    const commandsOf = async (headers: Record<string, string>) => (await getJson(`${gw.url}commands`, { headers })).body.commands.map((c: any) => c.schema).sort();
    const queriesOf = async (headers: Record<string, string>) => (await getJson(`${gw.url}queries`, { headers })).body.queries.map((q: any) => q.schema).sort();
    expect(await commandsOf(clerk)).toEqual(['place-order']);
    expect(await commandsOf(manager)).toEqual(['cancel-all-orders', 'open-vault', 'place-order']);
    // a key matches by its scopes: admin opens CancelAllOrders, not the vault (orders-admin only)
    expect(await commandsOf(ops)).toEqual(['cancel-all-orders', 'place-order']);
    expect(await queriesOf(clerk)).toEqual(['list-orders']);
    expect(await queriesOf(manager)).toEqual(['list-orders', 'order-audit']);
    expect((await getJson(`${gw.url}services/vault/commands`, { headers: clerk })).body.commands).toEqual([]);
  });

  it('using something hidden answers as if it did not exist', async () => {
    const { gw, clerk, manager } = await setup();
    const absent = await send(gw, clerk, 'NoSuchCommand', 'no-such-command');
    const hidden = await send(gw, clerk, 'CancelAllOrders', 'cancel-all-orders');
    expect(hidden.status).toBe(422);
    expect(hidden.body.error.code).toBe(absent.body.error.code);
    expect(hidden.body.error.code).toBe('UNKNOWN_COMMAND_TYPE');
    expect((await send(gw, manager, 'CancelAllOrders', 'cancel-all-orders')).status).toBe(201);
    expect((await getJson(`${gw.url}commands/cancel-all-orders/1.0`, { headers: clerk })).status).toBe(404);
    expect((await getJson(`${gw.url}commands/cancel-all-orders/1.0`, { headers: manager })).status).toBe(200);
    const hiddenQuery = await getJson(`${gw.url}queries/order-audit`, { headers: clerk });
    const absentQuery = await getJson(`${gw.url}queries/no-such-query`, { headers: clerk });
    expect(hiddenQuery.status).toBe(404);
    expect(hiddenQuery.body.error.code).toBe(absentQuery.body.error.code);
    expect((await getJson(`${gw.url}queries/order-audit/1.0`, { headers: clerk })).status).toBe(404);
  });

  it('the public manifest stays the same for every caller (capabilities, never per-caller content)', async () => {
    const { gw, clerk, manager } = await setup();
    const anonymous = (await getJson(`${gw.url}.well-known/proto`)).body;
    expect((await getJson(`${gw.url}.well-known/proto`, { headers: clerk })).body).toEqual(anonymous);
    expect((await getJson(`${gw.url}.well-known/proto`, { headers: manager })).body).toEqual(anonymous);
  });

  it('MCP: the command catalogue tool lists only what the caller may send, and sending a hidden one is refused as unknown', async () => {
    const { gw, clerk, manager } = await setup();
    const connect = async (headers: Record<string, string>) => {
      const client = new Client({ name: 'access-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { requestInit: { headers } }));
      track({ close: () => client.close() });
      return client;
    };
    const listed = async (client: Client) => {
      const result = await client.callTool({ name: 'get_command_catalogue', arguments: {} });
      return JSON.parse((result.content as Array<{ text: string }>)[0]!.text).commands.map((c: any) => c.schema).sort();
    };
    const asClerk = await connect(clerk);
    expect(await listed(asClerk)).toEqual(['place-order']);
    expect(await listed(await connect(manager))).toEqual(['cancel-all-orders', 'open-vault', 'place-order']);
    const hidden = await asClerk.callTool({ name: 'send_command', arguments: { schema: 'cancel-all-orders', version: '1.0', data: {} } });
    const absent = await asClerk.callTool({ name: 'send_command', arguments: { schema: 'no-such-thing', version: '1.0', data: {} } });
    expect(hidden.isError).toBe(true);
    expect((hidden.content as Array<{ text: string }>)[0]!.text).toContain('UNKNOWN_COMMAND_TYPE');
    expect((absent.content as Array<{ text: string }>)[0]!.text).toContain('UNKNOWN_COMMAND_TYPE');
  });
});
