/**
 * Surfaces the review of the event-visibility commits (052e86a..aa44585) found still carrying
 * events a caller does not see (per-caller catalogues, `access`); each test failed on that code.
 *
 * Config: `shop` (everyone's) and `vault` (`access: [admin]`); the `agent` key holds read and write,
 * so it sees the shop and never the vault (`GET /events` leaves the vault's events out for it).
 */
import { randomUUID } from 'node:crypto';
import { Role, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, createAuthenticatingFetchWithRetry, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/app.ts';
import { scriptedBackend, FAST_DISPATCH } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, reloadable, startTestGateway, track } from '../support/gateway.ts';
import { append, cloudEvent } from '../bridges/sse/support.ts';
import { startReceiver, subscribe, webhooksYaml } from '../bridges/webhooks/support.ts';

afterEach(closeAll);

/** Ten retries 400 ms apart: a queued delivery keeps being retried for about 4 s. */
const RETRIES = `[${Array(10).fill('400ms').join(', ')}]`;

const AGENT = { 'x-api-key': 'agent-key' };
const OPS = { 'x-api-key': 'ops-key' };

/** The backends: a scripted legacy `shop` at `shopUrl` (PlaceOrder ends with the terminal OrderCompletedV1) and the hidden `vault`. */
function configYaml(shopUrl: string, vaultHidden = true, extra = ''): string {
  return gatewayYaml(`${FAST_DISPATCH}
a2a: { settle: 300ms, timeout: 20s }
mcp: { enabled: true }
auth:
  type: apiKey
  keys:
    - { id: ops, key: ops-key, scopes: [read, write, admin] }
    - { id: agent, key: agent-key, scopes: [read, write] }
${extra}backends:
  - id: shop
    kind: legacy
    url: ${shopUrl}
    source: urn:shop
    correlationHeader: X-Request-Id
    commands:
      - type: PlaceOrder
        version: "1.0"
        jsonSchema: { type: object }
        request: { method: POST, path: /orders, body: "data" }
        events:
          success: { type: OrderCompletedV1, data: "response" }
  - id: vault
    kind: legacy
    url: http://127.0.0.1:9
    ${vaultHidden ? 'access: [admin]' : ''}
    commands:
      - { type: OpenVault, jsonSchema: { type: object }, request: { path: /open } }
`);
}

/**
 * A shop backend that, while it handles a command, has the vault append an event under the same
 * correlation id (a hidden backend reacting to the command, as correlation ids propagate), then answers 201.
 */
async function shopWithVaultReaction(gateway: () => Gateway) {
  const hiddenIds: string[] = [];
  const shop = await scriptedBackend((req, res) => {
    void (async () => {
      const correlationid = String(req.headers['x-request-id']);
      const [hidden] = await append(gateway(), [cloudEvent('VaultOpenedV1', { source: 'urn:vault', correlationid })], 'vault');
      hiddenIds.push(hidden!.id);
      res.writeHead(201, { 'content-type': 'application/json' }).end('{"ok":true}');
    })();
  });
  return { shop, hiddenIds };
}

/** The ids `GET /events?correlationId=` answers `headers`'s caller. */
async function visibleIds(gw: Gateway, headers: Record<string, string>, correlationId: string): Promise<string[]> {
  const { body } = await getJson(`${gw.url}events?correlationId=${encodeURIComponent(correlationId)}`, { headers });
  return body.events.map((e: { id: string }) => e.id);
}

describe('event visibility: the surfaces the review found open', () => {
  it('MCP send_command_and_wait leaves out an event of a hidden backend correlated to the command', async () => {
    let gw!: Gateway;
    const { shop, hiddenIds } = await shopWithVaultReaction(() => gw);
    gw = await startTestGateway(configYaml(shop.url));
    const client = new Client({ name: 'visibility-review', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { requestInit: { headers: AGENT } }));
    track({ close: () => client.close() });
    const result = await client.callTool({ name: 'send_command_and_wait', arguments: { schema: 'place-order', version: '1.0', data: {}, timeout_seconds: 10 } }, undefined, { timeout: 30_000 });
    expect(result.isError).toBeFalsy();
    const body = JSON.parse((result.content as Array<{ text: string }>)[0]!.text) as { id: string; events: Array<{ id: string; type: string }>; complete: boolean };
    expect(body.complete).toBe(true);
    expect(hiddenIds).toHaveLength(1);
    // The same caller's GET /events of this correlation id leaves the vault's event out ...
    const shown = await visibleIds(gw, AGENT, body.id);
    expect(shown).not.toContain(hiddenIds[0]);
    expect(await visibleIds(gw, OPS, body.id)).toContain(hiddenIds[0]);
    // ... and so must the tool's answer.
    expect(body.events.map((e) => e.type)).toEqual(['OrderCompletedV1']);
    expect(body.events.map((e) => e.id)).toEqual(shown);
  });

  it('A2A task artifacts leave out an event of a hidden backend correlated to the command', async () => {
    let gw!: Gateway;
    const { shop, hiddenIds } = await shopWithVaultReaction(() => gw);
    gw = await startTestGateway(configYaml(shop.url));
    const fetchImpl = createAuthenticatingFetchWithRetry(fetch, { headers: async () => AGENT, shouldRetryWithHeaders: async () => undefined });
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }));
    const a2a = await factory.createFromUrl(gw.url);
    const part: Part = { content: { $case: 'data', value: { type: 'PlaceOrder', data: {} } }, metadata: undefined, filename: '', mediaType: 'application/json' };
    const task = (await a2a.sendMessage({
      tenant: '',
      message: { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [part], metadata: undefined, extensions: [], referenceTaskIds: [] },
      configuration: undefined,
      metadata: undefined,
    })) as Task;
    expect(hiddenIds).toHaveLength(1);
    // The vault's event is not the agent's to see (GET /events leaves it out) ...
    const events = (await getJson(`${gw.url}events?limit=100`, { headers: AGENT })).body.events.map((e: { id: string }) => e.id);
    expect(events).not.toContain(hiddenIds[0]);
    // ... and the agent's task does not report it as an artifact.
    expect(task.artifacts.map((a) => a.name)).toEqual(['OrderCompletedV1']);
  });

  it('a reload that hides a backend stops the queued webhook retries of its events: they are not delivered afterwards', async () => {
    let failing = true;
    const receiver = await startReceiver(() => ({ status: failing ? 500 : 204 }));
    const shop = await scriptedBackend((_req, res) => res.writeHead(201).end('{}'));
    // Retries 400 ms apart: the first attempt fails while the vault is still everyone's.
    const { gw, rewrite } = await reloadable(configYaml(shop.url, false, webhooksYaml(RETRIES)));
    const agentSub = (await subscribe(gw, { webhook: { url: `http://127.0.0.1:${receiver.port}/agent` } }, AGENT)).body;
    expect(agentSub.id).toBeDefined();
    const [opened] = await append(gw, [cloudEvent('VaultOpenedV1', { source: 'urn:vault' })], 'vault');
    await eventually(() => expect(receiver.requests.filter((r) => r.path === '/agent')).toHaveLength(1));
    // The vault is hidden from the agent from now on: GET /events no longer shows it the event.
    expect((await rewrite(configYaml(shop.url, true, webhooksYaml(RETRIES)))).outcome).toBe('applied');
    const agentEvents = (await getJson(`${gw.url}events?limit=100`, { headers: AGENT })).body.events.map((e: { id: string }) => e.id);
    expect(agentEvents).not.toContain(opened!.id);
    failing = false;
    const after = receiver.requests.length;
    // A retry of the queued delivery would go out within 400 ms; wait for three schedule steps.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const delivered = receiver.requests.slice(after).filter((r) => r.path === '/agent').map((r) => JSON.parse(r.body).id);
    expect(delivered).not.toContain(opened!.id);
  });

  it('after a reload hides a backend, a resend of its event and a retry of its finished delivery are both 404 NOT_FOUND, and nothing is sent', async () => {
    const receiver = await startReceiver();
    const shop = await scriptedBackend((_req, res) => res.writeHead(201).end('{}'));
    const { gw, rewrite } = await reloadable(configYaml(shop.url, false, webhooksYaml()));
    const sub = (await subscribe(gw, { webhook: { url: `http://127.0.0.1:${receiver.port}/agent` } }, AGENT)).body;
    const [opened] = await append(gw, [cloudEvent('VaultOpenedV1', { source: 'urn:vault' })], 'vault');
    await eventually(() => expect(receiver.requests).toHaveLength(1));
    const deliveries = (await getJson(`${gw.url}subscriptions/${sub.id}/deliveries`, { headers: AGENT })).body.deliveries;
    await eventually(async () => expect((await getJson(`${gw.url}subscriptions/${sub.id}/deliveries`, { headers: AGENT })).body.deliveries[0].status).toBe('succeeded'));
    expect((await rewrite(configYaml(shop.url, true, webhooksYaml()))).outcome).toBe('applied');
    // The event is now hidden from the subscription's creator: a resend is refused as for an event not in the log ...
    const resend = await getJson(`${gw.url}subscriptions/${sub.id}/events/${opened!.id}/resend`, { method: 'POST', headers: AGENT });
    expect(resend.status).toBe(404);
    // ... and so must a retry of its delivery be: it sends the same hidden event to the same receiver.
    const retry = await getJson(`${gw.url}subscriptions/${sub.id}/deliveries/${deliveries[0].id}/retry`, { method: 'POST', headers: AGENT });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect({ status: retry.status, received: receiver.requests.length }).toEqual({ status: 404, received: 1 });
  });

  it('DeliveryExhaustedV1, an event of no backend that every caller reads, does not name the id and type of an event a caller does not see', async () => {
    const receiver = await startReceiver(() => ({ status: 500 }));
    const shop = await scriptedBackend((_req, res) => res.writeHead(201).end('{}'));
    // No retry: the first failed attempt exhausts the delivery.
    const gw = await startTestGateway(configYaml(shop.url, true, webhooksYaml('[]')));
    expect((await subscribe(gw, { webhook: { url: `http://127.0.0.1:${receiver.port}/ops` } }, OPS)).status).toBe(201);
    const [opened] = await append(gw, [cloudEvent('VaultOpenedV1', { source: 'urn:vault' })], 'vault');
    const exhausted = async (headers: Record<string, string>) => (await getJson(`${gw.url}events?type=DeliveryExhaustedV1`, { headers })).body.events;
    await eventually(async () => expect(await exhausted(OPS)).toHaveLength(1));
    // The agent does not see the vault's event ...
    expect((await getJson(`${gw.url}events?limit=100`, { headers: AGENT })).body.events.map((e: { id: string }) => e.id)).not.toContain(opened!.id);
    // ... and must not learn its id and type from the operational event either.
    const seenByAgent = JSON.stringify(await exhausted(AGENT));
    expect(seenByAgent).not.toContain(opened!.id);
    expect(seenByAgent).not.toContain('VaultOpenedV1');
  });
});
