import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { startReceiver, subscribe, tableResolver, webhooksYaml } from './support.ts';

afterEach(closeAll);

const auth = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }
backends:
  - { id: orders, kind: legacy, url: "http://127.0.0.1:9", service: com.acme.orders }`;

const alice = { 'X-Api-Key': 'alice-key' };
const bob = { 'X-Api-Key': 'bob-key' };
const SECRET = 'whsec_dGhlIHNlY3JldCB0aGF0IG11c3QgbmV2ZXIgbGVhaw==';

async function gateway() {
  return startTestGateway(gatewayYaml(`${auth}\n${webhooksYaml()}`), {}, undefined, { resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }) });
}

describe('POST /subscriptions', () => {
  it('answers 201 with the descriptor, without the secret', async () => {
    const gw = await gateway();
    const receiver = await startReceiver();
    const request = { serviceId: 'orders', webhook: { url: receiver.url(), secret: SECRET }, filter: { types: ['OrderPlacedV1'] } };
    const res = await subscribe(gw, request, alice);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      serviceId: 'orders',
      webhook: { url: receiver.url() },
      filter: { types: ['OrderPlacedV1'] },
      status: 'active',
      createdAt: expect.any(String),
    });
    expect(JSON.stringify(res.body)).not.toContain('secret');
  });

  it('refuses bad bodies with 400 INVALID_PARAMETER naming the field', async () => {
    const gw = await gateway();
    const cases: Array<[unknown, string]> = [
      [[], 'body'],
      [{}, 'webhook'],
      [{ webhook: {} }, 'webhook.url'],
      [{ webhook: { url: 42 } }, 'webhook.url'],
      [{ webhook: { url: `http://receiver.test/${'x'.repeat(2100)}` } }, 'webhook.url'],
      [{ webhook: { url: 'http://receiver.test/', secret: '' } }, 'webhook.secret'],
      [{ webhook: { url: 'http://receiver.test/' }, filter: { types: 'OrderPlacedV1' } }, 'filter.types'],
      [{ webhook: { url: 'http://receiver.test/' }, filter: { types: ['order-placed'] } }, 'filter.types[0]'],
      [{ webhook: { url: 'http://receiver.test/' }, filter: { types: ['OrderPlacedV1', 7] } }, 'filter.types[1]'],
      [{ webhook: { url: 'http://receiver.test/' }, filter: [] }, 'filter'],
      [{ webhook: { url: 'http://receiver.test/' }, serviceId: 3 }, 'serviceId'],
    ];
    for (const [body, parameter] of cases) {
      const res = await subscribe(gw, body, alice);
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_PARAMETER', details: { parameter } });
    }
    const broken = await fetch(`${gw.url}subscriptions`, { method: 'POST', headers: { ...alice, 'content-type': 'application/json' }, body: '{' });
    expect(broken.status).toBe(400);
    expect(((await broken.json()) as any).error.code).toBe('INVALID_JSON');
  });

  it('refuses an unknown serviceId with 404 SERVICE_NOT_FOUND', async () => {
    const gw = await gateway();
    const res = await subscribe(gw, { serviceId: 'nope', webhook: { url: 'http://receiver.test/' } }, alice);
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('SERVICE_NOT_FOUND');
  });

  it('needs write: 403 for a read-only key, 401 without a key', async () => {
    const gw = await gateway();
    expect((await subscribe(gw, { webhook: { url: 'http://receiver.test/' } }, { 'X-Api-Key': 'read-key' })).status).toBe(403);
    expect((await subscribe(gw, { webhook: { url: 'http://receiver.test/' } })).status).toBe(401);
  });
});

describe('reading and deleting subscriptions', () => {
  it('lists only the caller\'s own; another principal\'s is 404 to read, delete and its deliveries', async () => {
    const gw = await gateway();
    const mine = (await subscribe(gw, { webhook: { url: 'http://receiver.test/a', secret: SECRET } }, alice)).body;
    const theirs = (await subscribe(gw, { webhook: { url: 'http://receiver.test/b', secret: SECRET } }, bob)).body;
    const list = await getJson(`${gw.url}subscriptions`, { headers: alice });
    expect(list.status).toBe(200);
    expect(list.body.subscriptions).toEqual([mine]);
    expect((await getJson(`${gw.url}subscriptions/${mine.id}`, { headers: alice })).body).toEqual(mine);
    for (const path of [`subscriptions/${theirs.id}`, `subscriptions/${theirs.id}/deliveries`, 'subscriptions/no-such-id']) {
      const res = await getJson(`${gw.url}${path}`, { headers: alice });
      expect(res.status, path).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    expect((await fetch(`${gw.url}subscriptions/${theirs.id}`, { method: 'DELETE', headers: alice })).status).toBe(404);
    expect((await getJson(`${gw.url}subscriptions/${theirs.id}`, { headers: bob })).status).toBe(200);
    // The secret never appears in any answer.
    const texts = await Promise.all([`subscriptions`, `subscriptions/${mine.id}`, `subscriptions/${mine.id}/deliveries`].map(async (p) => (await fetch(`${gw.url}${p}`, { headers: alice })).text()));
    for (const text of texts) expect(text).not.toContain(SECRET.slice(6, 20));
  });

  it('DELETE answers 204, then the subscription is gone', async () => {
    const gw = await gateway();
    const { id } = (await subscribe(gw, { webhook: { url: 'http://receiver.test/a' } }, alice)).body;
    const res = await fetch(`${gw.url}subscriptions/${id}`, { method: 'DELETE', headers: alice });
    expect(res.status).toBe(204);
    expect((await getJson(`${gw.url}subscriptions/${id}`, { headers: alice })).status).toBe(404);
    expect((await fetch(`${gw.url}subscriptions/${id}`, { method: 'DELETE', headers: alice })).status).toBe(404);
  });

  it('deleting a service deletes the subscriptions linked to it, and only those', async () => {
    const gw = await gateway();
    const linked = (await subscribe(gw, { serviceId: 'orders', webhook: { url: 'http://receiver.test/a' } }, alice)).body;
    const standalone = (await subscribe(gw, { webhook: { url: 'http://receiver.test/b' } }, alice)).body;
    expect(await gw.webhooks.subscriptions.deleteByService('orders')).toEqual([linked.id]);
    expect((await getJson(`${gw.url}subscriptions`, { headers: alice })).body.subscriptions.map((s: { id: string }) => s.id)).toEqual([standalone.id]);
  });

  it('checks the deliveries query: status values, limit and cursor', async () => {
    const gw = await gateway();
    const { id } = (await subscribe(gw, { webhook: { url: 'http://receiver.test/a' } }, alice)).body;
    const ok = await getJson(`${gw.url}subscriptions/${id}/deliveries?status=dead`, { headers: alice });
    expect(ok).toMatchObject({ status: 200, body: { deliveries: [] } });
    const bad = await getJson(`${gw.url}subscriptions/${id}/deliveries?status=lost`, { headers: alice });
    expect(bad.body.error).toMatchObject({ code: 'INVALID_PARAMETER', details: { parameter: 'status' } });
    expect((await getJson(`${gw.url}subscriptions/${id}/deliveries?limit=0`, { headers: alice })).status).toBe(400);
    expect((await getJson(`${gw.url}subscriptions/${id}/deliveries?after=xyz`, { headers: alice })).body.error.code).toBe('INVALID_CURSOR');
  });
});

describe('manifest', () => {
  it('declares the subscription endpoints in the events capability and push.webhook', async () => {
    const gw = await gateway();
    const manifest = (await getJson(`${gw.url}.well-known/proto`)).body;
    const events = JSON.stringify(manifest).includes('/subscriptions') ? findEvents(manifest) : undefined;
    expect(events?.push?.webhook).toBe(true);
    const paths = events!.endpoints.map((e: { method: string; path: string }) => `${e.method} ${e.path}`);
    expect(paths).toEqual(expect.arrayContaining(['POST /subscriptions', 'GET /subscriptions', 'GET /subscriptions/{id}', 'DELETE /subscriptions/{id}', 'GET /subscriptions/{id}/deliveries']));
  });
});

function findEvents(manifest: any): any {
  const capabilities = manifest.PROTO?.capabilities ?? manifest.capabilities ?? [];
  return capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.events');
}

describe('subscription caps', () => {
  it('refuses a principal beyond webhooks.maxSubscriptionsPerPrincipal with 429 TOO_MANY_SUBSCRIPTIONS (others unaffected), and everyone beyond webhooks.maxSubscriptions', async () => {
    const yaml = gatewayYaml(`${auth}\n${webhooksYaml('[100ms, 200ms]', '  maxSubscriptionsPerPrincipal: 2\n  maxSubscriptions: 3\n')}`);
    const gw = await startTestGateway(yaml, {}, undefined, { resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }) });
    const receiver = await startReceiver();
    const request = { webhook: { url: receiver.url() } };
    // Concurrent creations cannot slip past the cap together.
    const first = await Promise.all([subscribe(gw, request, alice), subscribe(gw, request, alice), subscribe(gw, request, alice)]);
    expect(first.map((r) => r.status).sort()).toEqual([201, 201, 429]);
    const refused = first.find((r) => r.status === 429)!;
    expect(refused.body.error).toMatchObject({ code: 'TOO_MANY_SUBSCRIPTIONS', details: { limit: 'maxSubscriptionsPerPrincipal', max: 2 } });
    expect((await subscribe(gw, request, bob)).status).toBe(201);
    const global = await subscribe(gw, request, bob);
    expect(global.status).toBe(429);
    expect(global.body.error).toMatchObject({ code: 'TOO_MANY_SUBSCRIPTIONS', details: { limit: 'maxSubscriptions', max: 3 } });
    // Deleting one frees a place.
    const [mine] = (await getJson(`${gw.url}subscriptions`, { headers: alice })).body.subscriptions;
    expect((await getJson(`${gw.url}subscriptions/${mine.id}`, { method: 'DELETE', headers: alice })).status).toBe(204);
    expect((await subscribe(gw, request, alice)).status).toBe(201);
  });
});
