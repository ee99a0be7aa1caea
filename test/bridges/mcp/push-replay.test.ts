/**
 * No event of a followed command is lost while the client has no stream open: the log is the
 * buffer, and the next stream replays each follow from its last delivered event.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { MY_EVENTS_URI } from '../../../src/bridges/mcp/mcp-resources.ts';
import { closeAll, eventually, getJson } from '../../support/gateway.ts';
import { sseRecords } from '../../support/sse.ts';
import { connectModern, KEY, mcpGateway, toolJson } from './support.ts';

afterEach(closeAll);

const payment = { orderId: 'ord-replay', amount: 25, currency: 'EUR' };
const post = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'X-API-Key': KEY };

/** The `notifications/proto/event` messages of an MCP SSE stream, until `count` arrived. */
async function pushedOn(body: AsyncIterable<Uint8Array> & { destroy(): void }, count: number): Promise<any[]> {
  const got: any[] = [];
  const deadline = setTimeout(() => body.destroy(), 30_000);
  try {
    for await (const record of sseRecords(body)) {
      const message = record.data ? JSON.parse(record.data) : undefined;
      if (message?.method === 'notifications/proto/event') got.push({ id: record.id, ...message.params });
      if (got.length >= count) break;
    }
  } finally {
    clearTimeout(deadline);
    body.destroy();
  }
  return got;
}

describe('MCP push: replay after a dropped stream', () => {
  it('2026-07-28: events of a command sent while no listen stream was open arrive on the next listen', async () => {
    const { gw } = await mcpGateway();
    const { client, pushed } = await connectModern(gw.url);
    const first = await client.listen({ resourceSubscriptions: [MY_EVENTS_URI] });
    await first.close();
    const { id } = toolJson(await client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } }));
    // The event is in the log before any stream is open again.
    await eventually(async () => (await getJson(`${gw.url}events?correlationId=${id}`, { headers: { 'X-API-Key': KEY } })).body.events.length > 0, 20_000);
    expect(pushed).toEqual([]);
    const second = await client.listen({ resourceSubscriptions: [MY_EVENTS_URI] });
    const [event] = await eventually(() => (pushed.length > 0 ? pushed : undefined), 20_000);
    expect(event).toMatchObject({ correlationId: id, event: { type: 'PaymentAuthorizedV1' } });
    await second.close();
    // Delivered once: a third stream does not send it again.
    const third = await client.listen({ resourceSubscriptions: [MY_EVENTS_URI] });
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(pushed.filter((p) => p.correlationId === id)).toHaveLength(1);
    await third.close();
  });

  it('2025 era: a session\'s events produced before its GET stream opened are delivered when it opens', async () => {
    const { gw } = await mcpGateway();
    const init = await request(`${gw.url}mcp`, {
      method: 'POST', headers: post,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } } }),
    });
    await init.body.text();
    const session = init.headers['mcp-session-id'] as string;
    expect(session).toMatch(/^[0-9a-f-]{36}$/);
    const headers = { ...post, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' };
    const call = await request(`${gw.url}mcp`, {
      method: 'POST', headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } } }),
    });
    const text = await call.body.text();
    const answer = [...text.matchAll(/^data: (.*)$/gm)].map((m) => JSON.parse(m[1])).find((message) => message.id === 2);
    const { id } = JSON.parse(answer.result.content[0].text);
    await eventually(async () => (await getJson(`${gw.url}events?correlationId=${id}`, { headers: { 'X-API-Key': KEY } })).body.events.length > 0, 20_000);
    const stream = await request(`${gw.url}mcp`, { headers: { accept: 'text/event-stream', 'X-API-Key': KEY, 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' } });
    expect(stream.statusCode).toBe(200);
    const [event] = await pushedOn(stream.body, 1);
    expect(event).toMatchObject({ correlationId: id, event: { type: 'PaymentAuthorizedV1', correlationid: id } });
    expect(event.id).toBe(event.event.id);
  });
});
