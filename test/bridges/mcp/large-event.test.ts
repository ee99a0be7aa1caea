/**
 * Issue 21 item 5 on MCP: one event larger than `sse.maxBufferedBytes` (1 MiB by default) is
 * delivered on an MCP push stream like any other, with the events after it; the byte bound limits
 * a stream's backlog, never one event. Both eras live: a 2025 session's GET stream after
 * `resources/subscribe`, and a 2026-07-28 `subscriptions/listen` stream; and replayed: a followed
 * command's events produced while no stream was open arrive on the next listen.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { correlationUri, MY_EVENTS_URI } from '../../../src/bridges/mcp/mcp-resources.ts';
import { closeAll, eventually } from '../../support/gateway.ts';
import { append, cloudEvent, metricValue } from '../sse/support.ts';
import { connect, connectModern, mcpGateway, toolJson } from './support.ts';

afterEach(closeAll);

const LARGE = 1.1 * 1024 * 1024;

/** A 1.1 MB event and five small ones, all of correlation id `cid`. */
function burst(cid: string) {
  return [
    cloudEvent('LargeV1', { correlationid: cid, data: { blob: 'x'.repeat(LARGE) } }),
    ...Array.from({ length: 5 }, (_, i) => cloudEvent('SmallV1', { correlationid: cid, data: { i } })),
  ];
}

describe('MCP push and one event larger than sse.maxBufferedBytes (regression: poison event)', () => {
  it('2025 era: a subscribed correlation resource pushes the 1.1 MB event and the five after it, live, on the session stream', async () => {
    const { gw } = await mcpGateway();
    const { client, pushed } = await connect(gw);
    const cid = randomUUID();
    await client.subscribeResource({ uri: correlationUri(cid) });
    const events = await append(gw, burst(cid));
    const got = await eventually(() => (pushed.length >= 6 ? pushed : undefined), 30_000);
    expect(got.map((p) => p.event.id)).toEqual(events.map((e) => e.id));
    expect(JSON.stringify(got[0].event.data).length).toBeGreaterThan(LARGE);
    expect(await metricValue(gw, 'proto_gateway_sse_slow_consumer_disconnects_total')).toBe(0);
  });

  it('2026-07-28: a listen stream on a correlation resource gets the 1.1 MB event and the five after it, live', async () => {
    const { gw } = await mcpGateway();
    const { client, pushed } = await connectModern(gw.url);
    const cid = randomUUID();
    const stream = await client.listen({ resourceSubscriptions: [correlationUri(cid)] });
    await eventually(async () => (await metricValue(gw, 'proto_gateway_mcp_push_streams')) > 0);
    const events = await append(gw, burst(cid));
    const got = await eventually(() => (pushed.length >= 6 ? pushed : undefined), 30_000);
    expect(got.map((p) => p.event.id)).toEqual(events.map((e) => e.id));
    expect(JSON.stringify(got[0].event.data).length).toBeGreaterThan(LARGE);
    await stream.close();
  });

  it('2026-07-28: replayed on the next listen (the log is the buffer): a sent command\'s 1.1 MB event and the five after it, produced while no stream was open', async () => {
    const { gw } = await mcpGateway();
    const { client, pushed } = await connectModern(gw.url);
    const { id } = toolJson(await client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: { orderId: 'ord-large', amount: 5, currency: 'EUR' } } }));
    const later = await append(gw, burst(id));
    const again = await client.listen({ resourceSubscriptions: [MY_EVENTS_URI] });
    const ids = new Set(later.map((e) => e.id));
    const replayed = await eventually(() => {
      const ours = pushed.filter((p) => ids.has(p.event.id));
      return ours.length >= 6 ? ours : undefined;
    }, 30_000);
    expect(replayed.map((p) => p.event.id)).toEqual(later.map((e) => e.id));
    expect(replayed.every((p) => p.correlationId === id)).toBe(true);
    expect(JSON.stringify(replayed[0].event.data).length).toBeGreaterThan(LARGE);
    await again.close();
  });
});
