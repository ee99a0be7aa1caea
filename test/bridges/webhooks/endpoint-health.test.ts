/**
 * Endpoint health (issue 28): a failing streak past `webhooks.disableAfter` (a duration AND a count)
 * disables a subscription, with a fake clock, against a real loopback receiver; a success after a
 * streak ends it; every change is an operational event in the log; `POST /subscriptions/{id}/enable`
 * brings a disabled subscription back; the events reach `GET /events` and SSE.
 */
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryDispatcher } from '../../../src/bridges/webhooks/delivery-dispatcher.ts';
import { messageId } from '../../../src/bridges/webhooks/fan-out.ts';
import { MemoryDeliveryQueue } from '../../../src/bridges/webhooks/memory-delivery-queue.ts';
import { MemorySubscriptionStore } from '../../../src/bridges/webhooks/memory-subscription-store.ts';
import { OperationalEvents, WEBHOOKS_SOURCE } from '../../../src/bridges/webhooks/operational-events.ts';
import { DeliveryClient } from '../../../src/egress/delivery-client.ts';
import { SsrfGuard } from '../../../src/egress/ssrf-guard.ts';
import { MemoryEventLog } from '../../../src/log/memory.ts';
import { webhookMetrics } from '../../../src/metrics/webhooks.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, track } from '../../support/gateway.ts';
import { jsonEvents, readSse } from '../../support/sse.ts';
import { appendEvents, startReceiver, subscribe, tableResolver, webhooksYaml } from './support.ts';
import { subscription } from './subscription-store-contract.ts';

afterEach(closeAll);

const DAY = 86_400_000;

/** A dispatcher on memory stores with a fake clock, posting over real HTTP to loopback. */
async function harness(disableAfter: { durationMs: number; failures: number }) {
  const clock = { now: Date.parse('2030-01-01T00:00:00Z') };
  const log = new MemoryEventLog();
  await log.open();
  const store = new MemorySubscriptionStore();
  const queue = new MemoryDeliveryQueue();
  const logger = pino({ level: 'silent' });
  const guard = new SsrfGuard({ allowHttp: true, allowPrivateNetworks: ['127.0.0.0/8'] });
  const client = track(new DeliveryClient({ guard, timeoutMs: 5000 }));
  const dispatcher = new DeliveryDispatcher({
    queue, subscriptions: store, client, scheduleMs: [], concurrency: 4, leaseMs: 10_000,
    metrics: webhookMetrics(new Registry()), logger, events: new OperationalEvents(log, logger), disableAfter, now: () => clock.now,
  });
  track({ close: () => dispatcher.close() });
  await dispatcher.start();
  let n = 0;
  /** Queues one event for `subscriptionId` at the fake now and waits until its attempt ended. */
  async function deliver(subscriptionId: string): Promise<void> {
    n += 1;
    const id = messageId(subscriptionId, `evt-${n}`);
    await queue.enqueue([{ id, subscriptionId, eventId: `evt-${n}`, eventType: 'OrderPlacedV1', payload: '{}', nextAttemptMs: clock.now }], clock.now);
    dispatcher.wake();
    await eventually(async () => (await queue.list(subscriptionId, { after: 0, limit: 1000 })).deliveries.find((d) => d.id === id && (d.status === 'succeeded' || d.status === 'dead')));
  }
  const events = async (type?: string) => (await log.query(type ? { type } : {}, 0, 1000)).events.map((e) => e.event);
  return { clock, store, queue, deliver, events };
}

describe('endpoint health', () => {
  it('disables a subscription only once its streak has lasted disableAfter.duration AND counted disableAfter.failures', async () => {
    const receiver = await startReceiver(() => ({ status: 500 }));
    const h = await harness({ durationMs: 5 * DAY, failures: 3 });
    await h.store.create(subscription('s1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook` }));
    const start = h.clock.now;
    for (let i = 0; i < 3; i += 1) await h.deliver('s1');
    expect((await h.store.get('s1'))?.status).toBe('active');
    expect((await h.store.get('s1'))?.failing).toEqual({ failures: 3, sinceMs: start });
    h.clock.now = start + 5 * DAY - 1;
    await h.deliver('s1');
    expect((await h.store.get('s1'))?.status).toBe('active');
    h.clock.now = start + 5 * DAY;
    await h.deliver('s1');
    const disabled = (await h.store.get('s1'))!;
    expect(disabled).toMatchObject({ status: 'disabled', disabled: { atMs: start + 5 * DAY, reason: 'failing' } });

    const [event] = await h.events('SubscriptionDisabledV1');
    expect(event).toMatchObject({
      source: WEBHOOKS_SOURCE,
      correlationid: 's1',
      time: new Date(start + 5 * DAY).toISOString(),
      data: { subscriptionId: 's1', reason: 'failing', failures: 5, failingSince: new Date(start).toISOString() },
    });
    expect(await h.events('DeliveryExhaustedV1')).toHaveLength(5);
    expect((await h.events('DeliveryExhaustedV1'))[0]).toMatchObject({ correlationid: 's1', data: { subscriptionId: 's1', eventId: 'evt-1', eventType: 'OrderPlacedV1', attempts: 1, lastStatus: 500 } });
    expect(JSON.stringify(await h.events())).not.toContain(`${receiver.port}`);
  });

  it('a success ends the streak (SubscriptionRecoveredV1) and the count starts over', async () => {
    let healthy = false;
    const receiver = await startReceiver(() => ({ status: healthy ? 204 : 503 }));
    const h = await harness({ durationMs: DAY, failures: 2 });
    await h.store.create(subscription('s1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook` }));
    const start = h.clock.now;
    await h.deliver('s1');
    healthy = true;
    h.clock.now = start + 2 * DAY;
    await h.deliver('s1');
    expect((await h.store.get('s1'))?.failing).toBeUndefined();
    expect(await h.events('SubscriptionRecoveredV1')).toMatchObject([{ correlationid: 's1', data: { subscriptionId: 's1', failures: 1, failingSince: new Date(start).toISOString() } }]);
    healthy = false;
    await h.deliver('s1');
    h.clock.now += 2 * DAY;
    expect((await h.store.get('s1'))?.status).toBe('active');
    await h.deliver('s1');
    expect((await h.store.get('s1'))?.status).toBe('disabled');
    await h.deliver('s1');
    expect(await h.events('SubscriptionDisabledV1')).toHaveLength(1);
    expect(await h.events('SubscriptionRecoveredV1')).toHaveLength(1);
  });

  it('disableAfter.duration 0s never disables', async () => {
    const receiver = await startReceiver(() => ({ status: 500 }));
    const h = await harness({ durationMs: 0, failures: 1 });
    await h.store.create(subscription('s1', 'alice', { url: `http://127.0.0.1:${receiver.port}/hook` }));
    for (let i = 0; i < 3; i += 1) {
      h.clock.now += 30 * DAY;
      await h.deliver('s1');
    }
    expect((await h.store.get('s1'))?.status).toBe('active');
    expect(await h.events('SubscriptionDisabledV1')).toEqual([]);
  });
});

const auth = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }`;
const alice = { 'X-Api-Key': 'alice-key' };

async function gateway(schedule = '[50ms]') {
  return startTestGateway(gatewayYaml(`${auth}\n${webhooksYaml(schedule)}`), {}, undefined, { resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }) });
}

const post = (gw: { url: string }, path: string, headers: Record<string, string> = alice, body?: unknown) =>
  fetch(`${gw.url}${path}`, { method: 'POST', headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });

describe('POST /subscriptions/{id}/enable and operational events over HTTP', () => {
  it('a 410 disables (SubscriptionDisabledV1 on GET /events and SSE); enable brings it back (SubscriptionEnabledV1) and deliveries resume', async () => {
    const gw = await gateway();
    let gone = true;
    const receiver = await startReceiver(() => ({ status: gone ? 410 : 204 }));
    const { id } = (await subscribe(gw, { webhook: { url: receiver.url() } }, alice)).body;
    const stream = await fetch(`${gw.url}events/stream?type=SubscriptionDisabledV1`, { headers: { ...alice, accept: 'text/event-stream' } });
    expect(stream.status).toBe(200);
    const sse = readSse(stream.body!, { until: (r) => r.data.includes('SubscriptionDisabledV1'), timeoutMs: 20_000 });
    await appendEvents(gw, 'OrderPlacedV1');
    await eventually(async () => (await getJson(`${gw.url}subscriptions/${id}`, { headers: alice })).body.status === 'disabled');
    const descriptor = (await getJson(`${gw.url}subscriptions/${id}`, { headers: alice })).body;
    expect(descriptor).toMatchObject({ status: 'disabled', disabledReason: 'gone', disabledAt: expect.any(String) });

    const listed = await eventually(async () => (await getJson(`${gw.url}events?type=SubscriptionDisabledV1`, { headers: alice })).body.events?.[0]);
    expect(listed).toMatchObject({ source: 'urn:proto-gateway:webhooks', correlationid: id, data: { subscriptionId: id, reason: 'gone' } });
    const [streamed] = jsonEvents(await sse);
    expect(streamed.json).toMatchObject({ id: listed.id, type: 'SubscriptionDisabledV1', correlationid: id });

    expect((await post(gw, `subscriptions/${id}/enable`, { 'X-Api-Key': 'bob-key' })).status).toBe(404);
    expect((await post(gw, `subscriptions/${id}/enable`, { 'X-Api-Key': 'read-key' })).status).toBe(403);
    gone = false;
    const enabled = await post(gw, `subscriptions/${id}/enable`);
    expect(enabled.status).toBe(200);
    const body = (await enabled.json()) as any;
    expect(body).toMatchObject({ id, status: 'active' });
    expect(body.disabledAt).toBeUndefined();
    expect((await post(gw, `subscriptions/${id}/enable`)).status).toBe(200);
    const enabledEvents = (await getJson(`${gw.url}events?type=SubscriptionEnabledV1`, { headers: alice })).body.events;
    expect(enabledEvents).toMatchObject([{ correlationid: id, data: { subscriptionId: id } }]);

    const [eventId] = await appendEvents(gw, 'OrderPlacedV1');
    await eventually(() => receiver.requests.some((r) => JSON.parse(r.body).id === eventId));
    // The subscription's own operational events are never delivered to it.
    expect(receiver.requests.map((r) => JSON.parse(r.body).source)).not.toContain('urn:proto-gateway:webhooks');
  });

  it('another subscription without a filter receives the operational events of others', async () => {
    const gw = await gateway();
    const failing = await startReceiver(() => ({ status: 410 }));
    const watcher = await startReceiver();
    const { id } = (await subscribe(gw, { webhook: { url: failing.url() }, filter: { types: ['OrderPlacedV1'] } }, alice)).body;
    await subscribe(gw, { webhook: { url: watcher.url() }, filter: { types: ['SubscriptionDisabledV1'] } }, alice);
    await appendEvents(gw, 'OrderPlacedV1');
    const seen = await eventually(() => watcher.requests.find((r) => JSON.parse(r.body).type === 'SubscriptionDisabledV1'));
    expect(JSON.parse(seen.body)).toMatchObject({ correlationid: id });
  });
});
