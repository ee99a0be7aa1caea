/**
 * Per-caller catalogues (`access` on backends, commands and queries): a caller sees and uses only
 * what it may; anything hidden answers exactly as something that does not exist. Callers are
 * tokens of a real OpenID provider whose realm roles (a nested claim) both grant gateway scopes and
 * open restricted entries; API keys match by their scopes.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { closeAll, gatewayYaml, getJson, startTestGateway, tempDir, track } from '../support/gateway.ts';
import { startTestIdp, type TestClient } from '../support/oidc-provider.ts';
import * as grpc from '@grpc/grpc-js';
import { exampleBackends, protoBackend } from '../commands/support.ts';
import { grpcClient, unary } from '../support/grpc.ts';

afterEach(closeAll);

const clerk: TestClient = { id: 'clerk', secret: 'clerk-secret', scope: 'openid', roles: ['gateway-user'] };
const manager: TestClient = { id: 'manager', secret: 'manager-secret', scope: 'openid', roles: ['gateway-user', 'orders-admin'] };

async function setup() {
  const provider = track(await startTestIdp([clerk, manager]));
  const eventSchema = join(tempDir(), 'event.schema.json');
  await writeFile(eventSchema, JSON.stringify({ type: 'object' }));
  const gw = await startTestGateway(gatewayYaml(`auth:
  type: oauth2
  keys: [{ id: ops, key: ops-key, scopes: [read, write, admin] }, { id: auditor, key: auditor-key, scopes: [read] }]
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
    records:
      - { path: /orders, interval: 1h, types: [OrderPlacedV1], schema: ${eventSchema}, event: { type: OrderPlacedV1, id: "{id}" } }
  - id: vault
    kind: legacy
    url: http://127.0.0.1:9
    access: [orders-admin]
    commands:
      - { type: OpenVault, jsonSchema: { type: object }, request: { path: /open } }
    records:
      - { path: /log, interval: 1h, types: [VaultOpenedV1], schema: ${eventSchema}, event: { type: VaultOpenedV1, id: "{id}" } }
`));
  const as = async (client: TestClient) => ({ authorization: `Bearer ${await provider.token(client, 'openid')}` });
  return { gw, clerk: await as(clerk), manager: await as(manager), ops: { 'x-api-key': 'ops-key' }, auditor: { 'x-api-key': 'auditor-key' } };
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

describe('per-caller catalogues: event types, services, MCP resources and queries', () => {
  it('the event catalogue lists and describes only the event types of backends the caller may see', async () => {
    const { gw, clerk, manager } = await setup();
    const typesOf = async (headers: Record<string, string>) => (await getJson(`${gw.url}events/catalogue`, { headers })).body.events.map((e: any) => e.schema).sort();
    // a hidden command's own event types are hidden with it (CancelAllOrdersFailedV1), a hidden backend's all of them
    expect(await typesOf(clerk)).toEqual(['order-placed', 'place-order-failed']);
    expect(await typesOf(manager)).toEqual(['cancel-all-orders-failed', 'open-vault-failed', 'order-placed', 'place-order-failed', 'vault-opened']);
    expect((await getJson(`${gw.url}services/shop/events/catalogue`, { headers: clerk })).body.events.map((e: any) => e.schema).sort()).toEqual(['order-placed', 'place-order-failed']);
    const hidden = await getJson(`${gw.url}events/vault-opened/1`, { headers: clerk });
    const absent = await getJson(`${gw.url}events/no-such-event/1`, { headers: clerk });
    expect(hidden.status).toBe(404);
    expect(hidden.body.error.code).toBe('UNKNOWN_SCHEMA');
    expect(hidden.body.error.code).toBe(absent.body.error.code);
    expect((await getJson(`${gw.url}events/vault-opened/1`, { headers: manager })).status).toBe(200);
  });

  it('a backend the caller may not see is absent under /services: listed nowhere, every path below it 404 as for an unknown one', async () => {
    const { gw, clerk, manager } = await setup();
    const services = async (headers: Record<string, string>) => (await getJson(`${gw.url}services`, { headers })).body.services;
    expect((await services(clerk)).map((s: any) => s.id)).toEqual(['shop']);
    // a descriptor names only the commands its caller may send
    expect((await services(clerk))[0].accepts).toEqual(['PlaceOrder']);
    expect((await services(clerk))[0].produces.sort()).toEqual(['OrderPlacedV1', 'PlaceOrderFailedV1']);
    expect((await services(manager)).map((s: any) => s.id)).toEqual(['shop', 'vault']);
    expect((await services(manager))[0].accepts.sort()).toEqual(['CancelAllOrders', 'PlaceOrder']);
    const absent = await getJson(`${gw.url}services/nowhere/commands`, { headers: clerk });
    for (const path of ['services/vault', 'services/vault/', 'services/va%75lt/commands', 'services/vault%2Fcommands', 'services/vault/commands', 'services/vault/events/catalogue', 'services/vault/queries', 'services/vault/.well-known/proto', 'services/vault/anything/else']) {
      const hidden = await getJson(`${gw.url}${path}`, { headers: clerk });
      expect({ path, status: hidden.status, code: hidden.body.error?.code }).toEqual({ path, status: 404, code: absent.body.error.code });
    }
    expect((await getJson(`${gw.url}services/vault/commands`, { headers: manager })).body.commands.map((c: any) => c.schema)).toEqual(['open-vault']);
    expect((await getJson(`${gw.url}status`, { headers: clerk })).body.backends.map((b: any) => b.id)).toEqual(['shop']);
    // The public manifest is everyone's: a backend with an access list is not in it.
    const manifest = JSON.stringify((await getJson(`${gw.url}.well-known/proto`)).body);
    expect(manifest).toContain('services/shop/');
    expect(manifest).not.toContain('vault');
  });

  it('the pass-through to a proto backend the caller may not see is 404 SERVICE_NOT_FOUND; its own callers reach it', async () => {
    const provider = track(await startTestIdp([clerk, manager]));
    const { payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`auth:
  type: oauth2
  oauth2: { issuer: ${provider.issuer}, audience: proto-gateway, scopeClaim: realm_access.roles, scopeMap: { gateway-user: [read, write] } }
backends:
${protoBackend(payments.url, 'payments', '    access: [orders-admin]\n')}`));
    const as = async (client: TestClient) => ({ authorization: `Bearer ${await provider.token(client, 'openid')}` });
    const hidden = await getJson(`${gw.url}services/payments/refunds`, { headers: await as(clerk) });
    const absent = await getJson(`${gw.url}services/nowhere/refunds`, { headers: await as(clerk) });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ error: { ...absent.body.error, message: absent.body.error.message.replace('nowhere', 'payments'), details: { serviceId: 'payments' } } });
    expect((await getJson(`${gw.url}services/payments/refunds`, { headers: await as(manager) })).status).toBe(200);
  });

  it('gRPC SubmitCommand with a token: a command the caller may not send is refused exactly as an unknown type; its own callers send it', async () => {
    const provider = track(await startTestIdp([clerk, manager]));
    const gw = await startTestGateway(gatewayYaml(`grpc: { host: 127.0.0.1, port: 0 }
auth:
  type: oauth2
  oauth2: { issuer: ${provider.issuer}, audience: proto-gateway, scopeClaim: realm_access.roles, scopeMap: { gateway-user: [read, write] } }
backends:
  - id: shop
    kind: legacy
    url: http://127.0.0.1:9
    commands:
      - { type: CancelAllOrders, access: [orders-admin], jsonSchema: { type: object }, request: { path: /orders/cancel } }
`));
    const client = grpcClient(gw.grpc!.port);
    const bearer = async (who: TestClient) => {
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${await provider.token(who, 'openid')}`);
      return md;
    };
    const submit = (type: string, schema: string, md: grpc.Metadata) => unary(client, 'SubmitCommand', {
      id: crypto.randomUUID(), source: 'urn:test', spec_version: '1.0', type,
      attributes: { datacontenttype: { ce_string: 'application/json' }, dataschema: { ce_uri_ref: `${schema}/1.0` } },
      text_data: '{}',
    }, md).catch((err: grpc.ServiceError) => err);
    const hidden = await submit('CancelAllOrders', 'cancel-all-orders', await bearer(clerk));
    const absent = await submit('NoSuchCommand', 'no-such-command', await bearer(clerk));
    expect(hidden.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(hidden.code).toBe(absent.code);
    expect(hidden.metadata.get('proto-error-code')).toEqual(['UNKNOWN_COMMAND_TYPE']);
    expect(hidden.metadata.get('proto-error-code')).toEqual(absent.metadata.get('proto-error-code'));
    expect(await submit('CancelAllOrders', 'cancel-all-orders', await bearer(manager))).toEqual({ id: expect.any(String) });
  });

  it('MCP: tools/list, resources, query tools and event schemas show and run only what the caller may use', async () => {
    const { gw, clerk, manager, auditor } = await setup();
    const connect = async (headers: Record<string, string>) => {
      const client = new Client({ name: 'access-test', version: '1.0.0' });
      await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { requestInit: { headers } }));
      track({ close: () => client.close() });
      return client;
    };
    const asClerk = await connect(clerk);
    const asManager = await connect(manager);
    // tools/list: a caller without write is not offered the sending tools (calling one is still 403 FORBIDDEN)
    const toolNames = async (client: Client) => (await client.listTools()).tools.map((t) => t.name);
    const asAuditor = await connect(auditor);
    expect(await toolNames(asClerk)).toEqual(expect.arrayContaining(['send_command', 'send_command_and_wait', 'get_event_schema']));
    expect(await toolNames(asAuditor)).not.toContain('send_command');
    expect(await toolNames(asAuditor)).not.toContain('send_command_and_wait');
    expect((await toolNames(asAuditor)).length).toBe((await toolNames(asClerk)).length - 2);
    const refused = await asAuditor.callTool({ name: 'send_command', arguments: { schema: 'place-order', version: '1.0', data: {} } });
    expect((refused.content as Array<{ text: string }>)[0]!.text).toMatch(/^FORBIDDEN/);
    const uris = async (client: Client) => (await client.listResources()).resources.map((r) => r.uri).filter((u) => u.slice('proto-gateway://'.length).split('/').length === 3).sort();
    expect(await uris(asClerk)).toEqual(['proto-gateway://commands/place-order/1.0', 'proto-gateway://events/order-placed/1', 'proto-gateway://events/place-order-failed/1', 'proto-gateway://queries/list-orders/1.0']);
    expect((await uris(asManager)).length).toBe(10);
    const read = async (client: Client, uri: string) => JSON.parse(((await client.readResource({ uri })).contents[0] as { text: string }).text);
    expect((await read(asClerk, 'proto-gateway://events')).events.map((e: any) => e.schema).sort()).toEqual(['order-placed', 'place-order-failed']);
    expect((await read(asClerk, 'proto-gateway://queries')).queries.map((q: any) => q.schema)).toEqual(['list-orders']);
    for (const uri of ['proto-gateway://commands/cancel-all-orders/1.0', 'proto-gateway://queries/order-audit/1.0', 'proto-gateway://events/vault-opened/1']) {
      await expect(asClerk.readResource({ uri })).rejects.toThrow(/not found/i);
      expect((await asManager.readResource({ uri })).contents).toHaveLength(1);
    }
    const tool = async (client: Client, name: string, args: Record<string, unknown>) => {
      const result = await client.callTool({ name, arguments: args });
      return { isError: result.isError === true, text: (result.content as Array<{ text: string }>)[0]!.text };
    };
    expect(JSON.parse((await tool(asClerk, 'get_query_catalogue', {})).text).queries.map((q: any) => q.schema)).toEqual(['list-orders']);
    const hiddenQuery = await tool(asClerk, 'execute_query', { schema: 'order-audit' });
    const absentQuery = await tool(asClerk, 'execute_query', { schema: 'no-such-query' });
    expect(hiddenQuery.isError).toBe(true);
    expect(hiddenQuery.text.split(':')[0]).toBe(absentQuery.text.split(':')[0]);
    expect(hiddenQuery.text).toMatch(/^UNKNOWN_SCHEMA: no query/);
    expect((await tool(asClerk, 'get_query_schema', { schema: 'order-audit', version: '1.0' })).text).toMatch(/^UNKNOWN_SCHEMA: no query/);
    expect((await tool(asClerk, 'get_event_schema', { schema: 'vault-opened', version: '1' })).text).toMatch(/^UNKNOWN_SCHEMA/);
    expect((await tool(asManager, 'get_event_schema', { schema: 'vault-opened', version: '1' })).isError).toBe(false);
    // the manager may run it: the backend (down) is reached, so the refusal is no longer "unknown"
    expect((await tool(asManager, 'execute_query', { schema: 'order-audit' })).text).not.toMatch(/^UNKNOWN_SCHEMA: no query/);
  });
});
