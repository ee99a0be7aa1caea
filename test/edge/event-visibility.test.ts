/**
 * Per-caller catalogues reach the event log: a caller reads, streams and lists only the events whose
 * type it sees in the event catalogue (those of a backend with `access` it lacks, and the failure
 * type of a command with `access` it lacks, are left out), on every surface that reads the log:
 * `GET /events`, SSE, gRPC `ListEvents`/`Subscribe`, MCP `get_events`. Events of no backend (the
 * gateway's own) are everyone's.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../src/app.ts';
import { correlationUri } from '../../src/bridges/mcp/mcp-resources.ts';
import { closeAll, eventually, gatewayYaml, getJson, reloadable, startTestGateway, track } from '../support/gateway.ts';
import { grpcClient, keyMetadata, subscribe as grpcSubscribe, unary } from '../support/grpc.ts';
import { append, cloudEvent, openLive } from '../bridges/sse/support.ts';
import { startReceiver, subscribe, webhooksYaml } from '../bridges/webhooks/support.ts';

afterEach(closeAll);

const VIEWER = { 'x-api-key': 'viewer-key' };
const OPS = { 'x-api-key': 'ops-key' };
const CLERK = { 'x-api-key': 'clerk-key' };

async function setup(): Promise<Gateway> {
  return startTestGateway(configYaml());
}

/** The configuration: the vault backend has `access: [admin]` unless `vaultOpen`. */
function configYaml(vaultOpen = false): string {
  return gatewayYaml(`auth:
  type: apiKey
  keys:
    - { id: ops, key: ops-key, scopes: [read, write, admin] }
    - { id: viewer, key: viewer-key, scopes: [read] }
    - { id: clerk, key: clerk-key, scopes: [read, write] }
grpc: { host: 127.0.0.1, port: 0 }
${webhooksYaml()}
backends:
  - id: shop
    kind: legacy
    url: http://127.0.0.1:9
    commands:
      - { type: PlaceOrder, jsonSchema: { type: object }, request: { path: /orders } }
      - { type: CancelAllOrders, access: [admin], jsonSchema: { type: object }, request: { path: /orders/cancel } }
  - id: vault
    kind: legacy
    url: http://127.0.0.1:9
    ${vaultOpen ? '' : 'access: [admin]'}
    commands:
      - { type: OpenVault, jsonSchema: { type: object }, request: { path: /open } }
`);
}

/** Appends, in order: `hidden` events of the vault, then one of a hidden command's failure, then `shown` of the shop and one of no backend. */
async function history(gw: Gateway, hidden: number, shown: number) {
  const vault = await append(gw, Array.from({ length: hidden }, (_, i) => cloudEvent('VaultOpenedV1', { source: 'urn:vault', data: { i } })), 'vault');
  const failed = await append(gw, [cloudEvent('CancelAllOrdersFailedV1', { source: 'urn:shop' })], 'shop');
  const shop = await append(gw, Array.from({ length: shown }, (_, i) => cloudEvent('OrderPlacedV1', { source: 'urn:shop', data: { i } })), 'shop');
  const own = cloudEvent('SubscriptionDisabledV1', { source: 'urn:proto-gateway:webhooks' });
  await gw.log.append([{ event: own }]);
  return { hidden: [...vault, ...failed].map((e) => e.id), shown: [...shop, own].map((e) => e.id) };
}

/** Every page of `GET /events` with `query`, followed to the end. */
async function readAll(gw: Gateway, headers: Record<string, string>, query: string): Promise<{ ids: string[]; pages: number[] }> {
  const ids: string[] = [];
  const pages: number[] = [];
  let url = `${gw.url}events?${query}`;
  for (;;) {
    const { status, body } = await getJson(url, { headers });
    expect(status).toBe(200);
    ids.push(...body.events.map((e: { id: string }) => e.id));
    pages.push(body.events.length);
    if (body.nextCursor === undefined) return { ids, pages };
    url = `${gw.url}events?${query}&after=${encodeURIComponent(body.nextCursor)}`;
  }
}

describe('the event log per caller (access)', () => {
  it('GET /events leaves out what the caller does not see, and a page reads on to fill itself', async () => {
    const gw = await setup();
    const { hidden, shown } = await history(gw, 12, 6);
    const viewer = await readAll(gw, VIEWER, 'limit=5');
    expect(viewer.ids).toEqual(shown);
    // 13 hidden events, then 7 shown: the first page still holds 5 events.
    expect(viewer.pages[0]).toBe(5);
    expect((await readAll(gw, OPS, 'limit=50')).ids).toEqual([...hidden, ...shown]);
    expect((await readAll(gw, VIEWER, 'type=VaultOpenedV1')).ids).toEqual([]);
    expect((await readAll(gw, VIEWER, 'type=CancelAllOrdersFailedV1')).ids).toEqual([]);
    // The hidden backend's own path is not found at all.
    expect((await getJson(`${gw.url}services/vault/events`, { headers: VIEWER })).status).toBe(404);
  });

  it('a run of hidden events longer than a page answers a short page whose cursor moves on', async () => {
    const gw = await setup();
    const { shown } = await history(gw, 60, 2);
    const viewer = await readAll(gw, VIEWER, 'limit=2');
    expect(viewer.ids).toEqual(shown);
    expect(viewer.pages[0]).toBe(0);
  });

  it('an SSE stream replays (past more hidden events than a replay page) and goes live with only what its caller sees', async () => {
    const gw = await setup();
    const first = cloudEvent('OrderPlacedV1');
    await append(gw, [first], 'shop');
    const { shown: replayed } = await history(gw, 250, 2);
    const stream = track(Object.assign(await openLive(`${gw.url}events/stream`, { ...VIEWER, 'last-event-id': first.id }), { close: async () => {} }));
    const { shown: live } = await history(gw, 3, 2);
    const got = await stream.eventsUntil(live.at(-1)!);
    expect(got.map((record) => record.id)).toEqual([...replayed, ...live]);
    stream.body.destroy();
  });

  it('a reload that hides a backend applies to streams already open', async () => {
    const { gw, rewrite } = await reloadable(configYaml(true));
    const stream = track(Object.assign(await openLive(`${gw.url}events/stream`, VIEWER), { close: async () => {} }));
    const before = await append(gw, [cloudEvent('VaultOpenedV1')], 'vault');
    expect((await stream.eventsUntil(before[0]!.id)).map((record) => record.id)).toEqual([before[0]!.id]);
    expect((await rewrite(configYaml())).outcome).toBe('applied');
    const { shown } = await history(gw, 2, 1);
    expect((await stream.eventsUntil(shown.at(-1)!)).map((record) => record.id)).toEqual(shown);
    stream.body.destroy();
  });

  it('gRPC ListEvents and Subscribe carry only what the caller sees', async () => {
    const gw = await setup();
    const client = grpcClient(gw.grpc!.port);
    const { shown } = await history(gw, 4, 3);
    const page = await unary(client, 'ListEvents', { limit: 50 }, keyMetadata('viewer-key'));
    expect(page.events.map((e: { id: string }) => e.id)).toEqual(shown);
    const stream = grpcSubscribe(client, {}, keyMetadata('viewer-key'));
    await new Promise((resolve) => setTimeout(resolve, 200));
    const { shown: live } = await history(gw, 4, 3);
    await expect.poll(() => stream.events.length).toBe(live.length);
    expect(stream.events.map((e: { id: string }) => e.id)).toEqual(live);
    expect(stream.error()).toBeUndefined();
  });

  it('MCP get_events answers only what the caller sees', async () => {
    const gw = await setup();
    const { hidden, shown } = await history(gw, 4, 3);
    const client = new Client({ name: 'visibility-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { requestInit: { headers: VIEWER } }));
    track({ close: () => client.close() });
    const result = await client.callTool({ name: 'get_events', arguments: { params: { limit: 50 } } });
    const ids = JSON.parse((result.content as Array<{ text: string }>)[0]!.text).events.map((e: { id: string }) => e.id);
    expect(ids).toEqual(shown);
    expect(ids).not.toContain(hidden[0]);
  });

  it('MCP resources/subscribe to a correlation id pushes only the events the caller sees', async () => {
    const gw = await setup();
    const client = new Client({ name: 'visibility-test', version: '1.0.0' });
    const pushed: string[] = [];
    client.fallbackNotificationHandler = async (notification) => {
      const event = (notification.params as { event?: { id: string } } | undefined)?.event;
      if (notification.method === 'notifications/resources/updated' && event) pushed.push(event.id);
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { requestInit: { headers: VIEWER } }));
    track({ close: () => client.close() });
    await client.subscribeResource({ uri: correlationUri('cid-watched') });
    const hidden = await append(gw, [cloudEvent('VaultOpenedV1', { correlationid: 'cid-watched' })], 'vault');
    const shown = await append(gw, [cloudEvent('OrderPlacedV1', { correlationid: 'cid-watched' })], 'shop');
    await expect.poll(() => pushed, { timeout: 10_000 }).toContain(shown[0]!.id);
    expect(pushed).not.toContain(hidden[0]!.id);
  });

  it('webhooks deliver, recover and resend only what the subscription\'s creator saw', async () => {
    const gw = await setup();
    const receiver = await startReceiver();
    const clerk = (await subscribe(gw, { webhook: { url: `http://127.0.0.1:${receiver.port}/clerk` } }, CLERK)).body;
    const ops = (await subscribe(gw, { webhook: { url: `http://127.0.0.1:${receiver.port}/ops` } }, OPS)).body;
    const { hidden, shown } = await history(gw, 3, 2);
    const arrived = (path: string) => receiver.requests.filter((r) => r.path === path).map((r) => JSON.parse(r.body).id);
    await eventually(() => expect(arrived('/ops')).toHaveLength(hidden.length + shown.length));
    await eventually(() => expect(arrived('/clerk')).toEqual(shown));
    // A resend of an event the creator does not see is answered as for an event not in the log.
    const resend = await getJson(`${gw.url}subscriptions/${clerk.id}/events/${hidden[0]}/resend`, { method: 'POST', headers: CLERK });
    expect(resend.status).toBe(404);
    expect(resend.body.error.code).toBe('NOT_FOUND');
    // A recovery of the whole window sends the creator's events again, never the hidden ones.
    const since = new Date(Date.now() - 60_000).toISOString();
    const recovery = await getJson(`${gw.url}subscriptions/${clerk.id}/recover`, { method: 'POST', headers: { ...CLERK, 'content-type': 'application/json' }, body: JSON.stringify({ since }) });
    expect(recovery.status).toBe(202);
    await eventually(async () => expect((await getJson(`${gw.url}subscriptions/${clerk.id}/recoveries/${recovery.body.id}`, { headers: CLERK })).body.status).toBe('completed'));
    expect(arrived('/clerk')).toEqual([...shown, ...shown]);
    expect(arrived('/ops')).toHaveLength(hidden.length + shown.length);
    // A hidden service is not found, as an unknown one.
    const hiddenService = await subscribe(gw, { serviceId: 'vault', webhook: { url: `http://127.0.0.1:${receiver.port}/x` } }, CLERK);
    expect(hiddenService.status).toBe(404);
    expect(hiddenService.body.error.code).toBe('SERVICE_NOT_FOUND');
    expect(ops.id).toBeDefined();
  });
});
