import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { append, cloudEvent, metricValue } from '../sse/support.ts';
import { connect, KEY, mcpGateway, READER_KEY, toolJson, toolText } from './support.ts';

afterEach(closeAll);

const TOOLS = [
  'get_command_catalogue', 'get_command_schema', 'send_command', 'send_command_and_wait', 'get_query_catalogue', 'get_query_schema',
  'execute_query', 'get_manifest', 'get_events', 'get_event_schema', 'sample_event_stream',
];
const payment = { orderId: 'ord-7', amount: 25, currency: 'EUR' };

describe('MCP front: session and tools', () => {
  it('lists the protocol client\'s tools, each described, with a closed input schema', async () => {
    const { gw } = await mcpGateway();
    const { client } = await connect(gw, { Authorization: `Bearer ${KEY}` }, false);
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(TOOLS);
    for (const tool of tools) {
      expect(tool.description?.length).toBeGreaterThan(20);
      expect(tool.inputSchema.additionalProperties).toBe(false);
    }
    const send = tools.find((t) => t.name === 'send_command');
    expect(Object.keys(send?.inputSchema.properties ?? {}).sort()).toEqual(['data', 'schema', 'source', 'version']);
    expect(send?.inputSchema.required).toEqual(['schema', 'version', 'data']);
  });

  it('answers the catalogue, schema, query, manifest and event tools from the gateway\'s own pipelines', async () => {
    const { gw } = await mcpGateway();
    const { client } = await connect(gw, { 'X-API-Key': KEY }, false);
    const call = async (name: string, args: Record<string, unknown> = {}) => toolJson(await client.callTool({ name, arguments: args }));
    expect((await call('get_command_catalogue')).commands).toEqual((await getJson(`${gw.url}commands`, { headers: { 'X-API-Key': KEY } })).body.commands);
    expect((await call('get_command_schema', { schema: 'authorize-payment', version: '1.0' })).required).toEqual(['orderId', 'amount']);
    expect((await call('get_query_catalogue')).queries.map((q: any) => q.schema)).toEqual(['payment-status']);
    expect((await call('get_query_schema', { schema: 'payment-status', version: '1.0' })).parameters.required).toEqual(['orderId']);
    expect(await call('execute_query', { schema: 'payment-status', params: { orderId: 'ord-none' } })).toMatchObject({ orderId: 'ord-none', status: 'unknown' });
    const manifest = await call('get_manifest');
    expect(manifest.PROTO.services['io.proto.agents'].mcp).toEqual({
      transport: 'http',
      server: `${gw.url}mcp`,
      push: true,
      authentication: { type: 'apiKey', headers: [expect.objectContaining({ name: 'X-Api-Key' })] },
    });
    expect(manifest.PROTO.capabilities.find((c: any) => c.name === 'io.proto.agents.events').push).toEqual({ sse: true, webhook: true, mcp: true });

    const [marker] = await append(gw, [cloudEvent('MarkerV1')]);
    const { id } = await call('send_command', { schema: 'authorize-payment', version: '1.0', data: payment });
    const events = await eventually(async () => {
      const page = await call('get_events', { params: { correlationId: id, limit: 10 } });
      return page.events.length > 0 ? page.events : undefined;
    });
    expect(events[0]).toMatchObject({ type: 'PaymentAuthorizedV1', correlationid: id });
    // The event catalogue learns the backend's types as it reads them: polled.
    const eventSchema = await eventually(() => call('get_event_schema', { schema: 'payment-authorized', version: '1' }));
    expect(eventSchema.required).toEqual(['orderId', 'amount', 'currency']);
    // Replayed after the marker, filtered to the command: exactly its event.
    const sampled = await call('sample_event_stream', { params: { correlationId: id }, last_event_id: marker.id, max_seconds: 20, max_events: 1 });
    expect(sampled.events).toEqual([events[0]]);
  });

  it('refuses unknown arguments, invalid commands (naming each violation) and sending without the write scope, as tool errors', async () => {
    const { gw } = await mcpGateway();
    const { client } = await connect(gw, { 'X-API-Key': KEY }, false);
    const unknown = await client.callTool({ name: 'get_command_schema', arguments: { schema: 'authorize-payment', version: '1.0', verbose: true } });
    expect(unknown.isError).toBe(true);
    expect(toolText(unknown)).toContain('"verbose"');
    const invalid = await client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: { amount: -1 } } });
    expect(invalid.isError).toBe(true);
    expect(toolText(invalid)).toMatch(/^VALIDATION_FAILED: /);
    expect(toolText(invalid)).toContain('orderId');
    expect(toolText(invalid)).toContain('/amount');
    const unknownType = await client.callTool({ name: 'send_command', arguments: { schema: 'launch-rocket', version: '1.0', data: {} } });
    expect(unknownType.isError).toBe(true);
    expect(toolText(unknownType)).toMatch(/^UNKNOWN_COMMAND_TYPE: /);
    const query = await client.callTool({ name: 'execute_query', arguments: { schema: 'payment-status', params: {} } });
    expect(query.isError).toBe(true);
    expect(toolText(query)).toMatch(/^INVALID_PARAMETER: .*orderId/);
    const reader = await connect(gw, { 'X-API-Key': READER_KEY }, false);
    const forbidden = await reader.client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } });
    expect(forbidden.isError).toBe(true);
    expect(toolText(forbidden)).toMatch(/^FORBIDDEN: /);
    expect(await metricValue(gw, 'proto_gateway_mcp_tool_calls_total', { tool: 'send_command', outcome: 'error' })).toBe(3);
  });

  it('answers 401 without a valid key, and 404 for another key\'s session or an ended one', async () => {
    const { gw } = await mcpGateway();
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } };
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const none = await getJson(`${gw.url}mcp`, { method: 'POST', headers, body: JSON.stringify(init) });
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHENTICATED');
    const wrong = await getJson(`${gw.url}mcp`, { method: 'POST', headers: { ...headers, authorization: 'Bearer nope' }, body: JSON.stringify(init) });
    expect(wrong.status).toBe(401);
    await expect(connect(gw, { 'X-API-Key': 'nope' }, false)).rejects.toThrow();

    const { transport } = await connect(gw, { 'X-API-Key': KEY }, false);
    const sessionId = transport.sessionId as string;
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' });
    const other = await getJson(`${gw.url}mcp`, { method: 'POST', headers: { ...headers, 'X-API-Key': READER_KEY, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, body: ping });
    expect(other.status).toBe(404);
    expect(await metricValue(gw, 'proto_gateway_mcp_sessions')).toBe(1);
    await transport.terminateSession();
    expect(await metricValue(gw, 'proto_gateway_mcp_sessions')).toBe(0);
    const ended = await getJson(`${gw.url}mcp`, { method: 'POST', headers: { ...headers, 'X-API-Key': KEY, 'mcp-session-id': sessionId, 'mcp-protocol-version': '2025-06-18' }, body: ping });
    expect(ended.status).toBe(404);
  });

  it('refuses a session beyond mcp.maxSessions with 503, and closes a session idle for mcp.idleTimeout', async () => {
    const { gw } = await mcpGateway(', maxSessions: 1, idleTimeout: 1s');
    await connect(gw, { 'X-API-Key': KEY }, false);
    await expect(connect(gw, { 'X-API-Key': KEY }, false)).rejects.toThrow(/503|TOO_MANY_SESSIONS/);
    await eventually(async () => (await metricValue(gw, 'proto_gateway_mcp_sessions')) === 0, 20_000);
    await connect(gw, { 'X-API-Key': KEY }, false);
    expect(await metricValue(gw, 'proto_gateway_mcp_sessions')).toBe(1);
  });
});

describe('MCP front: off', () => {
  it('with mcp.enabled false serves no /mcp and announces neither the mcp block nor push.mcp', async () => {
    const gw = await startTestGateway(gatewayYaml('mcp: { enabled: false }'));
    expect((await getJson(`${gw.url}mcp`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(404);
    const manifest = (await getJson(`${gw.url}.well-known/proto`)).body;
    expect(manifest.PROTO.services['io.proto.agents'].mcp).toBeUndefined();
    expect(manifest.PROTO.capabilities.find((c: any) => c.name === 'io.proto.agents.events').push).toEqual({ sse: true, webhook: true });
  });
});

describe('MCP front: push', () => {
  it('pushes a sent command\'s events to the session that sent it, and not to another session', async () => {
    const { gw } = await mcpGateway();
    const sender = await connect(gw);
    const bystander = await connect(gw);
    const { id } = toolJson(await sender.client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } }));
    const [pushed] = await eventually(() => (sender.pushed.length > 0 ? sender.pushed : undefined));
    expect(pushed.correlationId).toBe(id);
    expect(pushed.event).toMatchObject({ type: 'PaymentAuthorizedV1', correlationid: id, data: { orderId: 'ord-7' } });
    // The bystander's own command proves its stream delivers; it still never saw the sender's event.
    const other = toolJson(await bystander.client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } }));
    await eventually(() => bystander.pushed.length > 0);
    expect(bystander.pushed.map((p) => p.correlationId)).toEqual([other.id]);
    expect(sender.pushed.map((p) => p.correlationId)).toEqual([id]);
    expect(await metricValue(gw, 'proto_gateway_mcp_notifications_total')).toBe(2);
  });

  it('send_command_and_wait returns the command\'s events, ending early on a terminal event', async () => {
    const { gw, payments } = await mcpGateway();
    const { client } = await connect(gw);
    const waiting = client.callTool(
      { name: 'send_command_and_wait', arguments: { schema: 'authorize-payment', version: '1.0', data: payment, timeout_seconds: 120 } },
      undefined,
      { timeout: 200_000 },
    );
    const sent = await eventually(() => payments.events.find((e) => e.type === 'PaymentAuthorizedV1' && e.data.orderId === 'ord-7'));
    payments.emit('PaymentCompletedV1', { orderId: 'ord-7' }, sent.correlationid as string);
    const result = toolJson(await waiting);
    expect(result.complete).toBe(true);
    expect(result.events.map((e: any) => e.type)).toEqual(['PaymentAuthorizedV1', 'PaymentCompletedV1']);
    expect(result.events.every((e: any) => e.correlationid === result.id)).toBe(true);
  });
});
