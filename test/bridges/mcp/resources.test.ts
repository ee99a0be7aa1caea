import { afterEach, describe, expect, it } from 'vitest';
import { correlationUri } from '../../../src/bridges/mcp/mcp-resources.ts';
import { closeAll, eventually, getJson } from '../../support/gateway.ts';
import { connect, connectModern, KEY, mcpGateway, toolJson } from './support.ts';

afterEach(closeAll);

const payment = { orderId: 'ord-res', amount: 25, currency: 'EUR' };

/** Every schema node of a JSON Schema document (objects reachable through any key). */
function nodes(schema: unknown): Record<string, unknown>[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const children = Object.values(schema).flatMap((value) => (Array.isArray(value) ? value.flatMap(nodes) : nodes(value)));
  return Array.isArray(schema) ? children : [schema as Record<string, unknown>, ...children];
}

describe('MCP resources, logging and tool schemas', () => {
  it('lists and reads the manifest, the catalogues and each schema, in both eras, with templates', async () => {
    const { gw } = await mcpGateway();
    const legacy = await connect(gw, { 'X-API-Key': KEY }, false);
    const modern = await connectModern(gw.url);
    for (const client of [legacy.client, modern.client] as any[]) {
      const { resources } = await client.listResources();
      const uris = resources.map((r: any) => r.uri);
      expect(uris).toEqual(expect.arrayContaining(['proto-gateway://manifest', 'proto-gateway://commands', 'proto-gateway://queries', 'proto-gateway://events', 'proto-gateway://commands/authorize-payment/1.0', 'proto-gateway://queries/payment-status/1.0']));
      const read = async (uri: string) => JSON.parse((await client.readResource({ uri })).contents[0].text);
      expect((await read('proto-gateway://commands')).commands).toEqual((await getJson(`${gw.url}commands`, { headers: { 'X-API-Key': KEY } })).body.commands);
      expect((await read('proto-gateway://commands/authorize-payment/1.0')).required).toEqual(['orderId', 'amount']);
      expect((await read('proto-gateway://manifest')).PROTO.services['io.proto.agents'].mcp.server).toBe(`${gw.url}mcp`);
      await expect(client.readResource({ uri: 'proto-gateway://commands/launch-rocket/1.0' })).rejects.toThrow();
      const { resourceTemplates } = await client.listResourceTemplates();
      expect(resourceTemplates.map((t: any) => t.uriTemplate)).toEqual(expect.arrayContaining(['proto-gateway://commands/{schema}/{version}', 'proto-gateway://events?correlationId={correlationId}']));
    }
  });

  it('2025 era: resources/subscribe to another client\'s correlation id pushes notifications/resources/updated for its later events', async () => {
    const { gw, payments } = await mcpGateway();
    const watcher = await connect(gw);
    const sender = await connectModern(gw.url);
    const updated: any[] = [];
    watcher.client.setNotificationHandler((await import('@modelcontextprotocol/sdk/types.js')).ResourceUpdatedNotificationSchema, async (n) => {
      updated.push(n.params);
    });
    const { id } = toolJson(await sender.client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: { ...payment, orderId: 'ord-watched' } } }));
    const sent = await eventually(() => payments.events.find((e) => e.type === 'PaymentAuthorizedV1' && e.data.orderId === 'ord-watched'), 20_000);
    await watcher.client.subscribeResource({ uri: correlationUri(id) });
    payments.emit('PaymentCompletedV1', { orderId: 'ord-watched' }, sent.correlationid as string);
    await eventually(() => updated.some((u) => u.uri === correlationUri(id)), 20_000);
    expect(updated.every((u) => u.uri === correlationUri(id))).toBe(true);
    // The first update may be the authorization (ingested after the subscription began); the resource then grows to both.
    const types = async () => JSON.parse(((await watcher.client.readResource({ uri: correlationUri(id) })).contents[0] as { text: string }).text).events.map((e: any) => e.type);
    const both = await eventually(async () => {
      const seen: string[] = await types();
      return seen.length >= 2 ? seen : undefined;
    }, 20_000);
    expect(both).toEqual(['PaymentAuthorizedV1', 'PaymentCompletedV1']);
  });

  it('2025 era: a sent command\'s events also arrive as notifications/resources/updated of its correlation resource', async () => {
    const { gw } = await mcpGateway();
    const client = await connect(gw);
    const updated: any[] = [];
    client.client.setNotificationHandler((await import('@modelcontextprotocol/sdk/types.js')).ResourceUpdatedNotificationSchema, async (n) => {
      updated.push(n.params);
    });
    const { id } = toolJson(await client.client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } }));
    const [update] = await eventually(() => (updated.length > 0 ? updated : undefined), 20_000);
    // The 1.x client keeps only the params its schema knows (uri); the event rides in params.event too.
    expect(update).toMatchObject({ uri: correlationUri(id) });
  });

  it('sends the caller a log message about its own tool calls (logging)', async () => {
    const { gw } = await mcpGateway();
    const client = await connect(gw, { 'X-API-Key': KEY }, false);
    const logged: any[] = [];
    client.client.setNotificationHandler((await import('@modelcontextprotocol/sdk/types.js')).LoggingMessageNotificationSchema, async (n) => {
      logged.push(n.params);
    });
    expect(client.client.getServerCapabilities()?.logging).toEqual({});
    await client.client.callTool({ name: 'get_command_schema', arguments: { schema: 'launch-rocket', version: '1.0' } });
    const [message] = await eventually(() => (logged.length > 0 ? logged : undefined));
    expect(message).toMatchObject({ level: 'warning', data: { tool: 'get_command_schema', outcome: 'error' } });
    expect(message.data.message).toMatch(/^UNKNOWN_SCHEMA|NOT_FOUND/);
  });

  it('declares every tool input schema as JSON Schema 2020-12, without type arrays', async () => {
    const { gw } = await mcpGateway();
    const { client } = await connectModern(gw.url);
    const { tools } = await client.listTools();
    for (const tool of tools) {
      expect(tool.inputSchema.$schema, tool.name).toBe('https://json-schema.org/draft/2020-12/schema');
      for (const node of nodes(tool.inputSchema)) expect(Array.isArray(node.type), `${tool.name}: ${JSON.stringify(node)}`).toBe(false);
    }
    // A value of another type in execute_query's params is still refused.
    const refused = await client.callTool({ name: 'execute_query', arguments: { schema: 'payment-status', params: { orderId: { nested: true } } } });
    expect(refused.isError).toBe(true);
  });
});
