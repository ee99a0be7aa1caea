/**
 * The server span of each transport a command can come in on (issue 27, item 7): a gRPC
 * `SubmitCommand`, an MCP `tools/call`, an A2A `SendMessage`, each the parent of the command's
 * accept; and the deliveries on gRPC and MCP streams, each linked to the event's trace. The
 * gateway runs in this process with the SDK started by `startTracing`, exporting to a loopback
 * OTLP/HTTP receiver.
 */
import { randomUUID } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { startTracing, type Tracing } from '../../src/telemetry/otlp-tracing.ts';
import { exampleBackends, FAST_DISPATCH, ordersBackend, placeOrder, protoBackend } from '../commands/support.ts';
import { connect, KEY, toolJson } from '../bridges/mcp/support.ts';
import { closeAll, eventually, gatewayYaml, startTestGateway } from '../support/gateway.ts';
import { grpcClient, subscribe, unary } from '../support/grpc.ts';
import { KIND, one, startOtlpReceiver } from './support.ts';

let tracing: Tracing | undefined;
afterEach(async () => {
  await closeAll();
  await tracing?.shutdown();
});

const CALLER_TRACE = '0af7651916cd43dd8448eb211c80319c';

describe('server spans of every transport', () => {
  it('a gRPC SubmitCommand, an MCP tools/call and an A2A SendMessage each open a server span, parent of the accept (and a gRPC Subscribe one for the stream); gRPC, MCP and A2A deliveries link to the event', async () => {
    const otlp = await startOtlpReceiver();
    tracing = startTracing({ traces: { endpoint: otlp.url, sampleRatio: 1 }, env: { OTEL_BSP_SCHEDULE_DELAY: '50' } });
    const { orders, payments } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}
grpc: { host: 127.0.0.1, port: 0 }
a2a: { settle: 200ms, timeout: 20s }
auth: { type: apiKey, keys: [{ id: agent, key: ${KEY}, scopes: [read, write] }] }
backends:
${ordersBackend(orders.url)}${protoBackend(payments.url)}`));

    // gRPC: a Subscribe stream open first, then SubmitCommand with the caller's traceparent in the metadata.
    const client = grpcClient(gw.grpc!.port);
    const md = new grpc.Metadata();
    md.set('x-api-key', KEY);
    const stream = subscribe(client, { type: 'OrderPlacedV1' }, md);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const command = placeOrder({ sku: 'widget', qty: 2 }) as Record<string, any>;
    const submitMd = md.clone();
    submitMd.set('traceparent', `00-${CALLER_TRACE}-b7ad6b7169203331-01`);
    await unary(client, 'SubmitCommand', {
      id: command.id, source: command.source, spec_version: '1.0', type: command.type,
      attributes: { datacontenttype: { ce_string: 'application/json' }, dataschema: { ce_uri_ref: command.dataschema } },
      text_data: JSON.stringify(command.data),
    }, submitMd);
    await eventually(() => stream.events.length >= 1, 20_000);
    // The Subscribe stream's own server span ends with the call.
    stream.call.cancel();

    // MCP: send_command on a session whose push stream then carries the command's events.
    const mcp = await connect(gw);
    const sent = toolJson(await mcp.client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: { orderId: 'ord-7', amount: 25, currency: 'EUR' } } }));
    await eventually(() => mcp.pushed.length >= 1, 20_000);

    // A2A: SendMessage carrying a command.
    const { SendMessageRequest, Role } = await import('@a2a-js/sdk');
    const a2aCommand = placeOrder({ sku: 'gadget', qty: 1 });
    const params = SendMessageRequest.toJSON({
      tenant: '', configuration: undefined, metadata: undefined,
      message: {
        messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, metadata: undefined, extensions: [], referenceTaskIds: [],
        parts: [{ content: { $case: 'data', value: a2aCommand }, metadata: undefined, filename: '', mediaType: 'application/json' }],
      },
    });
    const a2a = await fetch(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': KEY },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params }),
    });
    expect(a2a.status).toBe(200);
    const a2aBody = (await a2a.json()) as { error?: unknown };
    expect(a2aBody.error).toBeUndefined();

    const accepts = () => otlp.spans.filter((s) => s.name.startsWith('accept '));
    await eventually(() => accepts().length >= 3 && otlp.spans.some((s) => s.name === 'deliver grpc') && ['deliver grpc', 'deliver mcp', 'deliver a2a', 'proto.gateway.v1.EventGateway/Subscribe'].every((name) => otlp.spans.some((s) => s.name === name)), 30_000, 100);
    const spans = otlp.spans;

    const grpcCall = one(spans, (s) => s.name === 'proto.gateway.v1.EventGateway/SubmitCommand', 'the gRPC server span');
    expect(grpcCall).toMatchObject({ kind: KIND.SERVER, traceId: CALLER_TRACE, parentSpanId: 'b7ad6b7169203331' });
    expect(grpcCall.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.service': 'proto.gateway.v1.EventGateway', 'rpc.method': 'SubmitCommand', 'rpc.grpc.status_code': 0 });
    expect(one(spans, (s) => s.attributes['proto.command.id'] === command.id && s.name === 'accept orders', 'the gRPC accept').parentSpanId).toBe(grpcCall.spanId);

    const subscribeCall = one(spans, (s) => s.name === 'proto.gateway.v1.EventGateway/Subscribe', 'the gRPC Subscribe span');
    expect(subscribeCall).toMatchObject({ kind: KIND.SERVER });
    expect(subscribeCall.attributes).toMatchObject({ 'rpc.system': 'grpc', 'rpc.method': 'Subscribe', 'rpc.grpc.status_code': grpc.status.CANCELLED });

    const toolCall = one(spans, (s) => s.name === 'tools/call send_command', 'the MCP tool span');
    const mcpRequest = one(spans, (s) => s.spanId === toolCall.parentSpanId, 'the MCP request span');
    expect(mcpRequest).toMatchObject({ name: 'POST /mcp', kind: KIND.SERVER });
    expect(toolCall.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'send_command' });
    expect(one(spans, (s) => s.attributes['proto.command.id'] === sent.id && s.name === 'accept payments', 'the MCP accept').parentSpanId).toBe(toolCall.spanId);

    const a2aCall = one(spans, (s) => s.name === 'a2a/SendMessage', 'the A2A server span');
    expect(a2aCall.attributes).toMatchObject({ 'rpc.system': 'jsonrpc', 'rpc.service': 'a2a', 'rpc.method': 'SendMessage' });
    expect(one(spans, (s) => s.spanId === a2aCall.parentSpanId, 'the A2A request span').name).toBe('POST /a2a');
    const a2aAccept = one(spans, (s) => s.attributes['proto.command.type'] === 'PlaceOrder' && s.traceId === a2aCall.traceId && s.name.startsWith('accept'), 'the A2A accept');
    expect(a2aAccept.parentSpanId).toBe(a2aCall.spanId);

    // Stream deliveries: new traces linked to the event's trace (the event carries it).
    for (const name of ['deliver grpc', 'deliver mcp', 'deliver a2a']) {
      const delivery = spans.find((s) => s.name === name)!;
      expect(delivery).toMatchObject({ kind: KIND.PRODUCER, parentSpanId: '' });
      expect(delivery.links).toHaveLength(1);
      expect(delivery.attributes).toMatchObject({ 'messaging.system': 'proto-gateway', 'proto.delivery.transport': name.split(' ')[1] });
    }
    const pushedEvent = mcp.pushed[0]!.event;
    const mcpDelivery = spans.find((s) => s.name === 'deliver mcp' && s.attributes['proto.event.id'] === pushedEvent.id)!;
    expect(mcpDelivery.links[0]).toEqual({ traceId: String(pushedEvent.traceparent).split('-')[1], spanId: String(pushedEvent.traceparent).split('-')[2] });
  }, 120_000);
});
