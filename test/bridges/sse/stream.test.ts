import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../../examples/payments-service.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway, track } from '../../support/gateway.ts';
import { jsonEvents } from '../../support/sse.ts';
import { append, cloudEvent, openLive, openStream, readRecords } from './support.ts';

afterEach(closeAll);

describe('GET /events/stream', () => {
  it('answers 200 text/event-stream, uncached and unbuffered, opening with retry: before any event', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const stream = await openStream(`${gw.url}events/stream`);
    expect(stream.status).toBe(200);
    expect(stream.headers['content-type']).toBe('text/event-stream');
    expect(stream.headers['cache-control']).toBe('no-cache');
    expect(stream.headers['x-accel-buffering']).toBe('no');
    expect(stream.headers['content-encoding']).toBeUndefined();
    // Nothing is appended: only flushed headers and the retry field can make this pass.
    const [first] = await readRecords(stream, { until: () => true });
    expect(first.retry).toBeGreaterThan(0);
    expect(first.data).toBe('');
  });

  it('sends each event as id: <event id> and data: <one-line envelope JSON>', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const live = await openLive(`${gw.url}events/stream`);
    const [event] = await append(gw, [cloudEvent('OrderPlacedV1', { data: { text: 'two\nlines', n: 1 }, correlationid: 'c-1' })]);
    const [record] = await live.events(1);
    expect(record.id).toBe(event.id);
    expect(JSON.parse(record.data)).toEqual(event);
    expect(record.data).not.toContain('\n');
    live.close();
  });

  it('delivers only events appended after the connection opened (no history without Last-Event-ID)', async () => {
    const gw = await startTestGateway(gatewayYaml());
    await append(gw, [cloudEvent('OldV1'), cloudEvent('OldV1')]);
    const live = await openLive(`${gw.url}events/stream`);
    const fresh = await append(gw, [cloudEvent('NewV1'), cloudEvent('NewV1')]);
    const records = await live.events(2);
    expect(records.map((r) => r.id)).toEqual(fresh.map((e) => e.id));
    live.close();
  });

  it('filters by type, source and correlationId, combinable', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const byType = await openLive(`${gw.url}events/stream?type=PaidV1`);
    const bySource = await openLive(`${gw.url}events/stream?source=urn:a`);
    const byCorrelation = await openLive(`${gw.url}events/stream?correlationId=c-7`);
    const combined = await openLive(`${gw.url}events/stream?type=PaidV1&source=urn:a&correlationId=c-7`);
    const [paidA, paidB, shippedA, paidA7, other7] = await append(gw, [
      cloudEvent('PaidV1', { source: 'urn:a' }),
      cloudEvent('PaidV1', { source: 'urn:b' }),
      cloudEvent('ShippedV1', { source: 'urn:a' }),
      cloudEvent('PaidV1', { source: 'urn:a', correlationid: 'c-7' }),
      cloudEvent('ShippedV1', { source: 'urn:b', correlationid: 'c-7' }),
    ]);
    expect((await byType.events(3)).map((r) => r.id)).toEqual([paidA.id, paidB.id, paidA7.id]);
    expect((await bySource.events(3)).map((r) => r.id)).toEqual([paidA.id, shippedA.id, paidA7.id]);
    expect((await byCorrelation.events(2)).map((r) => r.id)).toEqual([paidA7.id, other7.id]);
    // The last event of the batch proves nothing else matched on the combined stream.
    const marker = (await append(gw, [cloudEvent('PaidV1', { source: 'urn:a', correlationid: 'c-7' })]))[0];
    expect((await combined.events(2)).map((r) => r.id)).toEqual([paidA7.id, marker.id]);
    for (const stream of [byType, bySource, byCorrelation, combined]) stream.close();
  });

  it('serves the per-service view at /services/{id}/events/stream from the log, not the pass-through', async () => {
    const payments = track(await startPaymentsService({ port: 0 }));
    const gw = await startTestGateway(
      gatewayYaml(`backends:\n  - { id: payments, kind: proto, url: "${payments.url}", events: { follow: poll, interval: 100ms } }`),
    );
    const scoped = await openLive(`${gw.url}services/payments/events/stream`);
    await append(gw, [cloudEvent('ElsewhereV1')], 'orders');
    // Only the gateway's log holds this one: the backend's own stream (the pass-through) never had it.
    const [direct] = await append(gw, [cloudEvent('GatewayOnlyV1')], 'payments');
    const emitted = payments.emit('PaymentNoticedV1', { n: 1 });
    const [first, second] = await scoped.events(2);
    expect(first.id).toBe(direct.id);
    expect(second.id).toBe(emitted.id);
    expect(JSON.parse(second.data)).toMatchObject({ type: 'PaymentNoticedV1', data: { n: 1 } });
    scoped.close();
    const unknown = await getJson(`${gw.url}services/nobody/events/stream`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('SERVICE_NOT_FOUND');
  });

  it('answers HEAD with the stream headers and no stream', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const res = await fetch(`${gw.url}events/stream`, { method: 'HEAD' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream');
  });

  it('declares GET /events/stream and push.sse in the manifest', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const { body } = await getJson(`${gw.url}.well-known/proto`);
    const events = body.PROTO.capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.events');
    expect(events.endpoints).toContainEqual(expect.objectContaining({ method: 'GET', path: '/events/stream' }));
    expect(events.push.sse).toBe(true);
  });

  it('ends every stream when the gateway closes, without waiting for the shutdown timeout', async () => {
    const gw = await startTestGateway(gatewayYaml('server: { host: 127.0.0.1, port: 0, shutdownTimeout: 60s }').replace('server: { host: 127.0.0.1, port: 0 }\n', ''));
    const streams = await Promise.all([1, 2, 3].map(() => openStream(`${gw.url}events/stream?type=X`)));
    const ended = streams.map((stream) => readRecords(stream, { timeoutMs: 10_000 }));
    await gw.close();
    for (const records of await Promise.all(ended)) expect(jsonEvents(records)).toEqual([]);
  });
});
