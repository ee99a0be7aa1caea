import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteEventLog } from '../../../src/log/sqlite.ts';
import { cloudEvent } from '../../log/fixtures/cloud-event.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir } from '../../support/gateway.ts';
import { appendEvents, holdingReceiver, metricValue, startReceiver, startTrap, subscribe, tableResolver, webhooksYaml } from './support.ts';

afterEach(closeAll);

const SECRET = `whsec_${Buffer.from('webhook test secret, 32 bytes!!!').toString('base64')}`;
const resolver = () => tableResolver({ 'receiver.test': ['127.0.0.1'] });

async function gateway(schedule?: string, extra = '') {
  return startTestGateway(gatewayYaml(webhooksYaml(schedule, extra)), {}, undefined, { resolver: resolver() });
}

/** The deliveries of subscription `id` (optionally of one status); `any`: rows of a JSON answer. */
async function deliveries(gw: { url: string }, id: string, status?: string): Promise<any[]> {
  return (await getJson(`${gw.url}subscriptions/${id}/deliveries${status ? `?status=${status}` : ''}`)).body.deliveries;
}

/** Waits until subscription `id` has a delivery of `status` matching `match`; returns it. */
async function awaitDelivery(gw: { url: string }, id: string, status: string, match: (d: any) => boolean = () => true): Promise<any> {
  return eventually(async () => (await deliveries(gw, id, status)).find(match));
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('webhook delivery', () => {
  it('posts the event envelope with Standard Webhooks headers that verify with the reference implementation', async () => {
    const gw = await gateway();
    const receiver = await startReceiver();
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url(), secret: SECRET } })).body;
    const [eventId] = await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.requests.length === 1);
    const [req] = receiver.requests;
    expect(req.method).toBe('POST');
    expect(req.headers.host).toBe(`receiver.test:${receiver.port}`);
    expect(req.headers['content-type']).toBe('application/json');
    expect(req.headers['webhook-id']).toMatch(/^msg_/);
    const verified = new Webhook(SECRET).verify(req.body, req.headers as Record<string, string>) as { id: string; type: string };
    expect(verified).toMatchObject({ id: eventId, type: 'OrderPlacedV1', specversion: '1.0' });
    const delivery = await awaitDelivery(gw, id, 'succeeded');
    expect(delivery).toMatchObject({ id: req.headers['webhook-id'], eventId, status: 'succeeded', attempts: 1, lastStatus: 204 });
    expect(await metricValue(gw, 'proto_gateway_webhook_deliveries_total', { outcome: 'succeeded' })).toBe(1);
  });

  it('delivers only the filtered types, only events after the subscription, and every type without a filter', async () => {
    const gw = await gateway();
    const receiver = await startReceiver();
    await appendEvents(gw, 'OrderPlacedV1');
    await subscribe(gw, { webhook: { url: receiver.url('/placed') }, filter: { types: ['OrderPlacedV1'] } });
    await subscribe(gw, { webhook: { url: receiver.url('/all') } });
    await appendEvents(gw, 'OrderShippedV1', 'OrderPlacedV1', 'PaymentTakenV1');
    await eventually(() => receiver.requests.length === 4);
    await sleep(200);
    const seen = receiver.requests.map((r) => `${r.path} ${JSON.parse(r.body).type}`).sort();
    expect(seen).toEqual(['/all OrderPlacedV1', '/all OrderShippedV1', '/all PaymentTakenV1', '/placed OrderPlacedV1']);
  });

  it('keeps the attempts of several subscriptions to one receiver in flight together, not queued behind 4 connections', async () => {
    const gw = await gateway();
    const receiver = await holdingReceiver();
    const origin = `http://receiver.test:${new URL(receiver.url).port}`;
    for (const n of [1, 2, 3]) await subscribe(gw, { webhook: { url: `${origin}/hook/${n}` } });
    await appendEvents(gw, 'OrderPlacedV1', 'OrderPlacedV1', 'OrderPlacedV1', 'OrderPlacedV1');
    // 4 per subscription (PER_SUBSCRIPTION) at once: 12 requests held open on 12 connections.
    await eventually(() => receiver.held() === 12);
    receiver.release();
    await eventually(() => receiver.arrivals.length === 12);
  });

  it('retries with the same webhook-id until the receiver heals', async () => {
    const gw = await gateway('[100ms, 100ms, 100ms]');
    const receiver = await startReceiver((_req, n) => ({ status: n < 3 ? 500 : 200 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url(), secret: SECRET } })).body;
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(async () => (await deliveries(gw, id, 'succeeded')).length === 1);
    expect(receiver.requests).toHaveLength(3);
    expect(new Set(receiver.requests.map((r) => r.headers['webhook-id'])).size).toBe(1);
    for (const req of receiver.requests) new Webhook(SECRET).verify(req.body, req.headers as Record<string, string>);
    expect((await deliveries(gw, id))[0]).toMatchObject({ status: 'succeeded', attempts: 3 });
    expect(await metricValue(gw, 'proto_gateway_webhook_attempts_total', { result: 'http_error' })).toBe(2);
  });

  it('dead-letters after the last retry: visible at ?status=dead and in the metrics', async () => {
    const gw = await gateway('[50ms, 50ms]');
    const receiver = await startReceiver(() => ({ status: 500 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } })).body;
    const [eventId] = await appendEvents(gw, 'OrderPlacedV1');
    const dead = await awaitDelivery(gw, id, 'dead');
    expect(dead).toMatchObject({ eventId, eventType: 'OrderPlacedV1', status: 'dead', attempts: 3, lastStatus: 500, lastError: 'receiver answered 500' });
    expect(receiver.requests).toHaveLength(3);
    expect(await metricValue(gw, 'proto_gateway_webhook_dead_letters_total')).toBe(1);
    expect(await metricValue(gw, 'proto_gateway_webhook_deliveries_total', { outcome: 'dead' })).toBe(1);
    expect(await deliveries(gw, id, 'pending')).toEqual([]);
  });

  it('retries a dead delivery on request: 202, delivered again under the same webhook-id with a fresh schedule', async () => {
    const gw = await gateway('[]');
    const receiver = await startReceiver((_req, n) => ({ status: n === 1 ? 500 : 204 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url(), secret: SECRET } })).body;
    await appendEvents(gw, 'OrderPlacedV1');
    const dead = await awaitDelivery(gw, id, 'dead');
    const retry = (deliveryId: string, subscription = id) =>
      fetch(`${gw.url}subscriptions/${subscription}/deliveries/${deliveryId}/retry`, { method: 'POST' });

    const res = await retry(dead.id);
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ id: dead.id, status: 'pending', attempts: 0, lastStatus: 500 });
    const done = await awaitDelivery(gw, id, 'succeeded');
    expect(done).toMatchObject({ id: dead.id, attempts: 1, lastStatus: 204 });
    expect(receiver.requests.map((r) => r.headers['webhook-id'])).toEqual([dead.id, dead.id]);
    new Webhook(SECRET).verify(receiver.requests[1].body, receiver.requests[1].headers as Record<string, string>);
    expect(await metricValue(gw, 'proto_gateway_webhook_deliveries_total', { outcome: 'succeeded' })).toBe(1);

    const missing = await retry('msg_missing');
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as any).error.code).toBe('NOT_FOUND');
    expect((await retry(dead.id, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('refuses to retry a delivery still pending: 409 CONFLICT naming its status', async () => {
    const gw = await gateway('[1h]');
    const receiver = await startReceiver(() => ({ status: 500 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } })).body;
    await appendEvents(gw, 'OrderPlacedV1');
    const pending = await awaitDelivery(gw, id, 'pending', (d) => d.attempts === 1);
    const res = await fetch(`${gw.url}subscriptions/${id}/deliveries/${pending.id}/retry`, { method: 'POST' });
    expect(res.status).toBe(409);
    expect(((await res.json()) as any).error).toMatchObject({ code: 'CONFLICT', details: { status: 'pending' } });
  });

  it('never follows a redirect: a 3xx is a failed attempt and the redirect target sees nothing', async () => {
    const gw = await gateway('[50ms]');
    const target = await startReceiver();
    const redirector = await startReceiver(() => ({ status: 302, headers: { location: target.url('/stolen') } }));
    const { id } = (await subscribe(gw, { webhook: { url: redirector.url() } })).body;
    await appendEvents(gw, 'OrderPlacedV1');
    const dead = await awaitDelivery(gw, id, 'dead');
    expect(dead).toMatchObject({ attempts: 2, lastStatus: 302 });
    expect(redirector.requests).toHaveLength(2);
    expect(target.requests).toHaveLength(0);
    expect(await metricValue(gw, 'proto_gateway_webhook_attempts_total', { result: 'redirect' })).toBe(2);
  });

  it('410 Gone disables the subscription and stops its deliveries', async () => {
    const gw = await gateway('[5s]');
    const receiver = await startReceiver(() => ({ status: 410 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } })).body;
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(async () => (await getJson(`${gw.url}subscriptions/${id}`)).body.status === 'disabled');
    await appendEvents(gw, 'OrderPlacedV1', 'OrderPlacedV1');
    await sleep(300);
    expect(receiver.requests).toHaveLength(1);
    expect(await deliveries(gw, id)).toMatchObject([{ status: 'dead', lastStatus: 410 }]);
    expect(await metricValue(gw, 'proto_gateway_webhook_deliveries_total', { outcome: 'gone' })).toBe(1);
  });

  it('honours Retry-After on 503', async () => {
    const gw = await gateway('[50ms]');
    const receiver = await startReceiver((_req, n) => (n === 1 ? { status: 503, headers: { 'retry-after': '2' } } : { status: 204 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } })).body;
    await appendEvents(gw, 'OrderPlacedV1');
    const pending = await awaitDelivery(gw, id, 'pending', (d) => d.attempts === 1);
    expect(Date.parse(pending.nextAttemptAt) - Date.parse(pending.updatedAt)).toBeGreaterThanOrEqual(1900);
    expect(pending).toMatchObject({ lastStatus: 503 });
  });

  it('DELETE cancels pending deliveries: nothing more reaches the receiver', async () => {
    const gw = await gateway('[300ms, 300ms]');
    const receiver = await startReceiver(() => ({ status: 500 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } })).body;
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(async () => (await deliveries(gw, id, 'pending')).some((d) => d.attempts === 1));
    expect((await fetch(`${gw.url}subscriptions/${id}`, { method: 'DELETE' })).status).toBe(204);
    await appendEvents(gw, 'OrderPlacedV1');
    await sleep(800);
    expect(receiver.requests).toHaveLength(1);
    expect(await metricValue(gw, 'proto_gateway_webhook_queue_depth', { status: 'pending' })).toBe(0);
  });

  it('one slow receiver holds at most its own 4 slots, never another subscription\'s deliveries', async () => {
    const gw = await gateway('[5s]');
    const slow = await startReceiver(() => ({ status: 204, delayMs: 3000 }));
    const fast = await startReceiver();
    await subscribe(gw, { webhook: { url: slow.url() } });
    await subscribe(gw, { webhook: { url: fast.url() } });
    await appendEvents(gw, ...Array.from({ length: 12 }, () => 'OrderPlacedV1'));
    await eventually(() => fast.requests.length === 12, 2500);
    expect(slow.requests.length).toBeLessThanOrEqual(4);
  });
});

describe('SSRF at delivery', () => {
  it('DNS rebinding: public at registration, loopback at delivery → refused before any connection, counted', async () => {
    const trap = await startTrap();
    const answers: Record<string, string[]> = { 'rebind.test': ['93.184.216.34'] };
    const rebinding = tableResolver(answers);
    const gw = await startTestGateway(gatewayYaml('webhooks: { allowHttp: true, retry: { schedule: [50ms] } }'), {}, undefined, { resolver: rebinding });
    const { status, body } = await subscribe(gw, { webhook: { url: `http://rebind.test:${trap.port}/hook` } });
    expect(status).toBe(201);
    answers['rebind.test'] = ['127.0.0.1'];
    await appendEvents(gw, 'OrderPlacedV1');
    const dead = await awaitDelivery(gw, body.id, 'dead');
    expect(dead).toMatchObject({ attempts: 2, lastError: 'target refused: address' });
    expect(dead.lastStatus).toBeUndefined();
    expect(trap.connections()).toBe(0);
    expect(rebinding.calls.filter((h) => h === 'rebind.test').length).toBeGreaterThanOrEqual(3);
    expect(await metricValue(gw, 'proto_gateway_webhook_attempts_total', { result: 'refused' })).toBe(2);
    expect(await metricValue(gw, 'proto_gateway_webhook_ssrf_refusals_total', { reason: 'address' })).toBe(2);
  });
});

describe('durability', () => {
  it('retries across a restart and delivers the events appended while the gateway was down', async () => {
    const dir = tempDir();
    const file = join(dir, 'gateway.yaml');
    const yaml = gatewayYaml(webhooksYaml('[300ms, 300ms, 300ms, 300ms]'), 'storage: { driver: sqlite, path: data/gateway.db }');
    let healthy = false;
    const receiver = await startReceiver(() => ({ status: healthy ? 200 : 500 }));
    const first = await startTestGateway(yaml, {}, file, { resolver: resolver() });
    const { id } = (await subscribe(first, { webhook: { url: receiver.url(), secret: SECRET } })).body;
    const [before] = await appendEvents(first, 'OrderPlacedV1');
    await eventually(() => receiver.requests.length >= 1);
    await first.close();

    const offline = new SqliteEventLog(join(dir, 'data', 'gateway.db'));
    await offline.open();
    await offline.append([{ event: cloudEvent('appended-while-down', { type: 'OrderShippedV1' }) }]);
    await offline.close();

    healthy = true;
    const second = await startTestGateway(yaml, {}, file, { resolver: resolver() });
    const done = await eventually(async () => {
      const list = await deliveries(second, id, 'succeeded');
      return list.length === 2 ? list : undefined;
    });
    expect(done.map((d: { eventId: string }) => d.eventId).sort()).toEqual([before, 'appended-while-down'].sort());
    const ids = new Set(receiver.requests.filter((r) => JSON.parse(r.body).id === before).map((r) => r.headers['webhook-id']));
    expect(ids.size).toBe(1);
    for (const req of receiver.requests) new Webhook(SECRET).verify(req.body, req.headers as Record<string, string>);
  });
});
