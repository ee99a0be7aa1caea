import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { append, cloudEvent, metricValue, openLive } from './support.ts';

afterEach(closeAll);

const keys = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read] }
    - { id: bob, key: bob-key, scopes: [read] }`;

/** A raw HTTP/1.1 client that sends the request and then never reads: the slowest possible consumer. */
function stalledClient(url: string, path: string): Socket {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAccept: text/event-stream\r\n\r\n`);
  socket.pause();
  return socket;
}

/** Resumes a socket and counts what it still receives until the server's close reaches it. */
function drainToClose(socket: Socket): Promise<number> {
  return new Promise((resolve) => {
    let bytes = 0;
    socket.on('data', (chunk: Buffer) => (bytes += chunk.length));
    socket.on('close', () => resolve(bytes));
    socket.resume();
  });
}

describe('SSE limits', () => {
  it('without authentication applies only the overall limit (every client is the same anonymous caller)', async () => {
    const gw = await startTestGateway(gatewayYaml('sse: { maxConnections: 3, maxConnectionsPerPrincipal: 1 }'));
    const url = `${gw.url}events/stream`;
    for (let i = 0; i < 3; i++) await openLive(url, {});
    const overall = await getJson(url);
    expect(overall.status).toBe(503);
    expect(overall.headers.get('retry-after')).toBe('5');
    expect(overall.body.error).toMatchObject({ code: 'STREAMS_EXHAUSTED', details: { limit: 'maxConnections' } });
  });

  it('refuses streams over sse.maxConnectionsPerPrincipal with 429 TOO_MANY_STREAMS and over sse.maxConnections (the shared pool full) with 503 STREAMS_EXHAUSTED', async () => {
    const gw = await startTestGateway(gatewayYaml(`${keys}\nsse: { maxConnections: 3, maxConnectionsPerPrincipal: 2 }`));
    const url = `${gw.url}events/stream`;
    const alice = { 'X-Api-Key': 'alice-key' };
    const bob = { 'X-Api-Key': 'bob-key' };
    const [first] = [await openLive(url, alice), await openLive(url, alice)];
    const perPrincipal = await getJson(url, { headers: alice });
    expect(perPrincipal.status).toBe(429);
    expect(perPrincipal.headers.get('content-type')).toBe('application/json');
    expect(perPrincipal.body.error).toMatchObject({ code: 'TOO_MANY_STREAMS', details: { limit: 'maxConnectionsPerPrincipal', max: 2 } });
    await openLive(url, bob);
    const overall = await getJson(url, { headers: bob });
    expect(overall.status).toBe(503);
    expect(overall.headers.get('retry-after')).toBe('5');
    expect(overall.body.error).toMatchObject({ code: 'STREAMS_EXHAUSTED', details: { limit: 'maxConnections', max: 3 } });
    // A closed stream gives its slot back.
    first.close();
    await eventually(async () => (await metricValue(gw, 'proto_gateway_sse_connections')) === 2);
    const again = await openLive(url, alice);
    expect(again.status).toBe(200);
  });

  it('disconnects a client that does not read (slow consumer) while a reading client gets every event', async () => {
    const gw = await startTestGateway(gatewayYaml('sse: { maxBufferedBytes: 64kb }'));
    const fast = await openLive(`${gw.url}events/stream`);
    const slow = stalledClient(gw.url, '/events/stream');
    await eventually(async () => (await metricValue(gw, 'proto_gateway_sse_connections')) === 2);
    const padding = 'x'.repeat(256 * 1024);
    let appendedBytes = 0;
    // One large event at a time, each read by the fast client before the next: only the stalled one falls behind.
    for (let i = 0; i < 400 && (await metricValue(gw, 'proto_gateway_sse_slow_consumer_disconnects_total')) === 0; i++) {
      const [event] = await append(gw, [cloudEvent('BulkV1', { data: { i, padding } })]);
      appendedBytes += padding.length;
      expect((await fast.events(1)).map((r) => r.id)).toEqual([event.id]);
    }
    expect(await metricValue(gw, 'proto_gateway_sse_slow_consumer_disconnects_total')).toBe(1);
    expect(await metricValue(gw, 'proto_gateway_sse_connections')).toBe(1);
    // The server closed it: what reaches the client is what the kernel had taken, far from everything appended.
    const received = await drainToClose(slow);
    expect(received).toBeLessThan(appendedBytes);
    const [after] = await append(gw, [cloudEvent('AfterV1')]);
    expect((await fast.events(1)).map((r) => r.id)).toEqual([after.id]);
    fast.close();
  });

  it('delivers every event exactly once to each of 200 concurrent streams', async () => {
    const gw = await startTestGateway(gatewayYaml());
    const streams = await Promise.all(Array.from({ length: 200 }, () => openLive(`${gw.url}events/stream`)));
    expect(await metricValue(gw, 'proto_gateway_sse_connections')).toBe(200);
    const appended = [];
    for (let batch = 0; batch < 5; batch++) {
      appended.push(...(await append(gw, Array.from({ length: 4 }, (_, i) => cloudEvent('FanV1', { data: { batch, i } })))));
    }
    const marker = (await append(gw, [cloudEvent('EndV1')]))[0];
    const expected = [...appended, marker].map((event) => event.id);
    const received = await Promise.all(streams.map((stream) => stream.eventsUntil(marker.id, 10_000)));
    for (const records of received) expect(records.map((r) => r.id)).toEqual(expected);
    for (const stream of streams) stream.close();
    await eventually(async () => (await metricValue(gw, 'proto_gateway_sse_connections')) === 0);
    expect(await metricValue(gw, 'proto_gateway_sse_events_sent_total')).toBe(200 * expected.length);
  });
});
