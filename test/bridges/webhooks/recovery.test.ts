/**
 * Recovery of a time range (issue 28): `POST /subscriptions/{id}/recover` re-sends every event of
 * the window that the subscription takes, in log order, under its `webhook-id`, on a lane of its
 * own; durable across a restart (SQLite) and shared by two replicas on one Redis; one at a time per
 * subscription (409); a window partly removed by retention says which part was gone.
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app.ts';
import { messageId } from '../../../src/bridges/webhooks/fan-out.ts';
import { canPrune } from '../../../src/log/EventLog.ts';
import { BASE_TIME_MS, cloudEvent } from '../../log/fixtures/cloud-event.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir } from '../../support/gateway.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { appendEvents, startReceiver, subscribe, tableResolver, webhooksYaml, type Receiver } from './support.ts';

afterEach(closeAll);

const resolver = () => tableResolver({ 'receiver.test': ['127.0.0.1'] });
const WINDOW = { since: new Date(BASE_TIME_MS - 60_000).toISOString(), until: new Date(BASE_TIME_MS + 86_400_000).toISOString() };

function gateway(storage: string, perSecond = 100_000): Promise<Gateway> {
  return startTestGateway(gatewayYaml(webhooksYaml('[50ms]', `  recovery: { perSecond: ${perSecond} }\n`), storage), {}, undefined, { resolver: resolver() });
}

/** Appends `n` events (times a minute apart from `BASE_TIME_MS`, in batches); returns their ids in log order. */
async function appendMany(gw: Gateway, n: number, type = 'OrderPlacedV1'): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < n; start += 500) {
    const events = Array.from({ length: Math.min(500, n - start) }, (_, i) => cloudEvent(`rec-${Math.random().toString(36).slice(2)}-${start + i}`, { type }, (start + i) % 1000));
    await gw.log.append(events.map((event) => ({ event })));
    ids.push(...events.map((e) => e.id));
  }
  return ids;
}

async function post(gw: { url: string }, path: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

const recoveryOf = async (gw: { url: string }, subscription: string, id: string) => (await getJson(`${gw.url}subscriptions/${subscription}/recoveries/${id}`)).body;

/** Every event id received, in arrival order, and checks each carries its webhook-id for `subscription`. */
function received(receiver: Receiver, subscription: string): string[] {
  return receiver.requests.map((r) => {
    const id = JSON.parse(r.body).id as string;
    expect(r.headers['webhook-id']).toBe(messageId(subscription, id));
    return id;
  });
}

describe('POST /subscriptions/{id}/recover', () => {
  it('recovers 5,000 events across a restart (SQLite): each once, in log order, with its webhook-id', async () => {
    const path = join(tempDir(), 'gateway.db');
    const storage = `storage: { driver: sqlite, path: ${path} }`;
    const first = await gateway(storage, 2000);
    const ids = await appendMany(first, 5000);
    const receiver = await startReceiver();
    const { id } = (await subscribe(first, { webhook: { url: receiver.url() } })).body;
    const started = await post(first, `subscriptions/${id}/recover`, WINDOW);
    expect(started.status).toBe(202);
    expect(started.body).toMatchObject({ subscriptionId: id, status: 'running', since: WINDOW.since, until: WINDOW.until, delivered: 0 });
    const conflict = await post(first, `subscriptions/${id}/recover`, WINDOW);
    expect(conflict.status).toBe(409);
    expect(conflict.body.error).toMatchObject({ code: 'CONFLICT', details: { recoveryId: started.body.id } });

    await eventually(() => receiver.requests.length >= 1000, 60_000);
    await first.close();
    const atRestart = receiver.requests.length;
    expect(atRestart).toBeLessThan(5000);
    const saved = (await (async () => {
      const again = await gateway(storage, 100_000);
      return again;
    })());
    const done = await eventually(async () => {
      const r = await recoveryOf(saved, id, started.body.id);
      return r.status === 'completed' ? r : undefined;
    }, 120_000, 200);
    expect(done).toMatchObject({ status: "completed", delivered: 5000 });
    expect(done.gone).toBeUndefined();
    expect(received(receiver, id)).toEqual(ids);
    expect((await post(saved, `subscriptions/${id}/recover`, WINDOW)).status).toBe(202);
  }, 240_000);

  it('recovers 5,000 events with two replicas on one Redis: each once, in log order, one recovery at a time', async () => {
    const prefix = randomPrefix();
    const storage = `storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }`;
    try {
      const a = await gateway(storage, 3000);
      const b = await gateway(storage, 3000);
      const ids = await appendMany(a, 5000);
      const receiver = await startReceiver();
      const { id } = (await subscribe(a, { webhook: { url: receiver.url() } })).body;
      const started = await post(a, `subscriptions/${id}/recover`, WINDOW);
      expect(started.status).toBe(202);
      expect((await post(b, `subscriptions/${id}/recover`, WINDOW)).status).toBe(409);
      await eventually(() => receiver.requests.length >= 1500, 60_000);
      // The replica running it stops: the other takes it over from its saved position.
      await a.close();
      const done = await eventually(async () => {
        const r = await recoveryOf(b, id, started.body.id);
        return r.status === 'completed' ? r : undefined;
      }, 120_000, 200);
      expect(done.delivered).toBe(5000);
      expect(received(receiver, id)).toEqual(ids);
    } finally {
      await closeAll();
      await deletePrefix(SHARED_REDIS_URL, prefix);
    }
  }, 240_000);

  it('re-sends events delivered before under the same webhook-id, only the types the subscription takes, and a live delivery is not held up', async () => {
    const gw = await gateway('storage: { driver: memory }', 20);
    const receiver = await startReceiver();
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() }, filter: { types: ['OrderPlacedV1'] } })).body;
    const live = await appendEvents(gw, 'OrderPlacedV1', 'OrderShippedV1');
    await eventually(() => receiver.requests.length === 1);
    const firstId = receiver.requests[0]!.headers['webhook-id'];
    const more = await appendMany(gw, 200);
    await eventually(() => receiver.requests.length === 201);
    receiver.requests.length = 0;

    const started = await post(gw, `subscriptions/${id}/recover`, WINDOW);
    expect(started.status).toBe(202);
    await eventually(() => receiver.requests.length >= 1);
    expect(receiver.requests[0]!.headers['webhook-id']).toBe(firstId);
    // 20 a second: the recovery takes ~10 s; a live event goes out meanwhile on its own lane.
    const [fresh] = await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.requests.some((r) => JSON.parse(r.body).id === fresh), 5000);
    expect((await recoveryOf(gw, id, started.body.id)).status).toBe('running');
    const recovered = receiver.requests.map((r) => JSON.parse(r.body).id as string).filter((e) => e !== fresh);
    expect(recovered).toEqual([live[0], ...more].slice(0, recovered.length));
  }, 60_000);

  it('a window partly removed by retention recovers what is left and says which part was gone', async () => {
    const gw = await gateway('storage: { driver: memory }');
    const receiver = await startReceiver();
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() }, filter: { types: ['OrderShippedV1'] } })).body;
    const ids = await appendMany(gw, 10, 'OrderShippedV1');
    await eventually(() => receiver.requests.length === 10);
    receiver.requests.length = 0;
    if (!canPrune(gw.log)) throw new Error('the memory log prunes');
    await gw.log.prune({ maxEvents: 4, maxAgeMs: 365 * 86_400_000 });
    const started = await post(gw, `subscriptions/${id}/recover`, WINDOW);
    expect(started.body.gone).toEqual({ since: WINDOW.since, until: new Date(BASE_TIME_MS + 6 * 60_000).toISOString() });
    const done = await eventually(async () => {
      const r = await recoveryOf(gw, id, started.body.id);
      return r.status === 'completed' ? r : undefined;
    });
    expect(done).toMatchObject({ delivered: 4, gone: started.body.gone });
    expect(received(receiver, id)).toEqual(ids.slice(6));
  });

  it('refuses bad windows with 400, unknown recoveries with 404, a disabled subscription with 409', async () => {
    const gw = await gateway('storage: { driver: memory }');
    const receiver = await startReceiver(() => ({ status: 410 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } })).body;
    for (const [body, parameter] of [[{}, 'since'], [{ since: 'yesterday' }, 'since'], [{ since: '2030-01-02T00:00:00Z', until: '2030-01-01T00:00:00Z' }, 'until'], [{ since: 5 }, 'since']] as const) {
      const res = await post(gw, `subscriptions/${id}/recover`, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'INVALID_PARAMETER', details: { parameter } });
    }
    expect((await getJson(`${gw.url}subscriptions/${id}/recoveries/nope`)).status).toBe(404);
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(async () => (await getJson(`${gw.url}subscriptions/${id}`)).body.status === 'disabled');
    expect((await post(gw, `subscriptions/${id}/recover`, WINDOW)).status).toBe(409);
  });

  it('is the caller\'s own: another principal gets 404 for recover and a recovery, a read-only key 403, a bad enable body 400', async () => {
    const yaml = gatewayYaml(`auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }
${webhooksYaml('[50ms]')}`);
    const gw = await startTestGateway(yaml, {}, undefined, { resolver: resolver() });
    const as = (key: string) => ({ 'X-Api-Key': key, 'content-type': 'application/json' });
    const receiver = await startReceiver();
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } }, { 'X-Api-Key': 'alice-key' })).body;
    const recover = (key: string) => fetch(`${gw.url}subscriptions/${id}/recover`, { method: 'POST', headers: as(key), body: JSON.stringify(WINDOW) });
    expect((await recover('bob-key')).status).toBe(404);
    expect((await recover('read-key')).status).toBe(403);
    const started = await recover('alice-key');
    expect(started.status).toBe(202);
    const rid = ((await started.json()) as any).id;
    expect((await fetch(`${gw.url}subscriptions/${id}/recoveries/${rid}`, { headers: as('bob-key') })).status).toBe(404);
    expect((await fetch(`${gw.url}subscriptions/${id}/recoveries/${rid}`, { headers: as('alice-key') })).status).toBe(200);
    const badEnable = await fetch(`${gw.url}subscriptions/${id}/enable`, { method: 'POST', headers: as('alice-key'), body: JSON.stringify({ recover: 'yes' }) });
    expect(badEnable.status).toBe(400);
    expect(((await badEnable.json()) as any).error).toMatchObject({ code: 'INVALID_PARAMETER', details: { parameter: 'recover' } });
    const broken = await fetch(`${gw.url}subscriptions/${id}/recover`, { method: 'POST', headers: as('alice-key'), body: '{"since":' });
    expect(broken.status).toBe(400);
  });
});
