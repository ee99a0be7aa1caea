/** The SDK v2 client (`@modelcontextprotocol/client`) in both eras: pinned to 2026-07-28, and unpinned (the 2025 handshake). */
import { afterEach, describe, expect, it } from 'vitest';
import { MY_EVENTS_URI } from '../../../src/bridges/mcp/mcp-resources.ts';
import { closeAll, eventually, track } from '../../support/gateway.ts';
import { metricValue } from '../sse/support.ts';
import { connectModern, KEY, mcpGateway, toolJson } from './support.ts';

afterEach(closeAll);

const payment = { orderId: 'ord-9', amount: 25, currency: 'EUR' };

describe('MCP front, 2026-07-28 era (SDK v2 client, stateless)', () => {
  it('connects without initialize or session, and calls the tools', async () => {
    const { gw } = await mcpGateway();
    const { client } = await connectModern(gw.url);
    expect(client.getProtocolEra()).toBe('modern');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('send_command');
    const catalogue = toolJson(await client.callTool({ name: 'get_command_catalogue', arguments: {} }));
    expect(catalogue.commands.map((c: any) => c.schema)).toContain('authorize-payment');
  });

  it('pushes the events of the caller\'s commands on a subscriptions/listen stream', async () => {
    const { gw } = await mcpGateway();
    const { client, pushed } = await connectModern(gw.url);
    const subscription = await client.listen({ resourceSubscriptions: [MY_EVENTS_URI] });
    expect(subscription.honoredFilter).toEqual({ resourceSubscriptions: [MY_EVENTS_URI] });
    const { id } = toolJson(await client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } }));
    const [event] = await eventually(() => (pushed.length > 0 ? pushed : undefined), 20_000);
    expect(event).toMatchObject({ correlationId: id, event: { type: 'PaymentAuthorizedV1', correlationid: id } });
    await subscription.close();
  });

  it('send_command_and_wait streams each event as notifications/progress before its result', async () => {
    const { gw, payments } = await mcpGateway();
    const { client } = await connectModern(gw.url);
    const progress: any[] = [];
    const waiting = client.callTool(
      { name: 'send_command_and_wait', arguments: { schema: 'authorize-payment', version: '1.0', data: payment, timeout_seconds: 120 } },
      { onprogress: (update) => progress.push(update), timeout: 200_000 },
    );
    const sent = await eventually(() => payments.events.find((e) => e.type === 'PaymentAuthorizedV1' && e.data.orderId === 'ord-9'));
    await eventually(() => progress.length > 0, 20_000);
    payments.emit('PaymentCompletedV1', { orderId: 'ord-9' }, sent.correlationid as string);
    const result = toolJson(await waiting);
    expect(result.events.map((e: any) => e.type)).toEqual(['PaymentAuthorizedV1', 'PaymentCompletedV1']);
    expect(progress.map((p) => p.message)).toEqual(['PaymentAuthorizedV1', 'PaymentCompletedV1']);
    expect(progress.map((p) => p.progress)).toEqual([1, 2]);
  });
});

describe('MCP front, 2025 era with the SDK v2 client (no version pin: initialize and a session)', () => {
  it('opens a session, calls the tools and gets its command\'s events on the session stream', async () => {
    const { gw } = await mcpGateway();
    const { Client, StreamableHTTPClientTransport } = await import('@modelcontextprotocol/client');
    const client = new Client({ name: 'v2-legacy', version: '1.0.0' });
    const pushed: any[] = [];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/proto/event') pushed.push(n.params);
    };
    const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { requestInit: { headers: { 'X-API-Key': KEY } } });
    await client.connect(transport);
    track({ close: () => client.close() });
    expect(client.getProtocolEra()).toBe('legacy');
    expect(transport.sessionId).toMatch(/^[0-9a-f-]{36}$/);
    await eventually(async () => (await metricValue(gw, 'proto_gateway_mcp_push_streams')) === 1, 20_000);
    const { id } = toolJson(await client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } }));
    const [event] = await eventually(() => (pushed.length > 0 ? pushed : undefined), 20_000);
    expect(event).toMatchObject({ correlationId: id, event: { type: 'PaymentAuthorizedV1', correlationid: id } });
  });
});
