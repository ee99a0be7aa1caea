/**
 * Regression: one event larger than `sse.maxBufferedBytes` (1 MB by default) ended every live SSE
 * and gRPC stream that should carry it ("the stream fell too far behind"), a client resuming with
 * its last id met it again, and a gRPC replay stalled for good after it (paced writes waited for a
 * 'drain' Node never emits when write() returned true). The bound is on a subscriber's backlog,
 * never on one event: a 1.1 MB event followed by five small ones reaches every stream, live and
 * replayed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app.ts';
import { closeAll, eventually, gatewayYaml, startTestGateway } from '../../support/gateway.ts';
import { grpcClient, keyMetadata, subscribe } from '../../support/grpc.ts';
import { append, cloudEvent, idsOf, metricValue, openLive } from '../sse/support.ts';

afterEach(closeAll);

const LARGE = 1.1 * 1024 * 1024;

function burst() {
  return [
    cloudEvent('LargeV1', { data: { blob: 'x'.repeat(LARGE) } }),
    ...Array.from({ length: 5 }, (_, i) => cloudEvent('SmallV1', { data: { i } })),
  ];
}

async function gateway(): Promise<Gateway> {
  return startTestGateway(gatewayYaml('grpc: { host: 127.0.0.1, port: 0 }'));
}

async function grpcIds(gw: Gateway, request: Record<string, unknown>, count: number): Promise<string[]> {
  const sub = subscribe(grpcClient(gw.grpc!.port), request, keyMetadata());
  await eventually(() => sub.events.length >= count || sub.error(), 30_000);
  expect(sub.error()).toBeUndefined();
  sub.call.cancel();
  return sub.events.map((event) => event.id);
}

describe('an event larger than sse.maxBufferedBytes (regression: poison event)', () => {
  it('reaches a live SSE stream and a live gRPC Subscribe, with the five events after it', async () => {
    const gw = await gateway();
    const sse = await openLive(`${gw.url}events/stream`);
    const sub = subscribe(grpcClient(gw.grpc!.port), {}, keyMetadata());
    await eventually(async () => (await metricValue(gw, 'proto_gateway_quota_slots', { quota: 'streams' })) === 2);
    const events = await append(gw, burst());
    const expected = events.map((e) => e.id);
    expect(idsOf(await sse.events(6, 30_000))).toEqual(expected);
    await eventually(() => sub.events.length >= 6 || sub.error(), 30_000);
    expect(sub.error()).toBeUndefined();
    expect(sub.events.map((e) => e.id)).toEqual(expected);
    expect(sub.events[0].text_data.length).toBeGreaterThan(LARGE);
    expect(await metricValue(gw, 'proto_gateway_sse_slow_consumer_disconnects_total')).toBe(0);
    sse.close();
    sub.call.cancel();
  });

  it('is replayed after Last-Event-ID / last_event_id, with the five events after it', async () => {
    const gw = await gateway();
    const [marker] = await append(gw, [cloudEvent('MarkerV1')]);
    const events = await append(gw, burst());
    const expected = events.map((e) => e.id);
    const sse = await openLive(`${gw.url}events/stream`, { 'last-event-id': marker.id });
    expect(idsOf(await sse.events(6, 30_000))).toEqual(expected);
    sse.close();
    expect(await grpcIds(gw, { last_event_id: marker.id }, 6)).toEqual(expected);
    // Resuming after the large event itself continues with the small ones.
    expect(await grpcIds(gw, { last_event_id: expected[0] }, 5)).toEqual(expected.slice(1));
  });
});
