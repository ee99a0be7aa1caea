/**
 * The one admission path (src/edge/): the operations table, credential verifiers (async, in
 * order), and the per-principal quotas every transport shares.
 */
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { Admission } from '../../src/edge/admission.ts';
import { ANONYMOUS, type CredentialVerifier } from '../../src/edge/credentials.ts';
import { OPERATION_SCOPES, a2aOperation } from '../../src/edge/operations.ts';
import type { AuthConfig } from '../../src/config/types.ts';
import { isProtoError } from '../../src/errors.ts';
import { NO_ADMISSION_METRICS } from '../../src/metrics/admission.ts';
import { connect } from '../bridges/mcp/support.ts';
import { metricValue, openLive, openStream } from '../bridges/sse/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { grpcClient, keyMetadata, subscribe } from '../support/grpc.ts';

afterEach(closeAll);

const auth: AuthConfig = {
  type: 'apiKey',
  header: 'X-Api-Key',
  keys: [{ id: 'alice', key: 'alice-key', scopes: ['read'] }],
};

function admission(verifiers: CredentialVerifier[] = []): Admission {
  return new Admission({
    config: { auth, sse: { maxConnections: 4, maxConnectionsPerPrincipal: 2 } as never, mcp: { maxSessions: 4, maxSessionsPerPrincipal: 2 } as never },
    metrics: NO_ADMISSION_METRICS,
    verifiers,
  });
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    if (isProtoError(err)) return err.code;
    throw err;
  }
  return 'admitted';
}

describe('operations table', () => {
  it('writes need write on every transport; reads need read', () => {
    for (const op of ['a2a.SendMessage', 'a2a.SendStreamingMessage', 'a2a.CreateTaskPushNotificationConfig', 'mcp.send_command', 'grpc.SubmitCommand', 'http.write'] as const) {
      expect(OPERATION_SCOPES[op], op).toBe('write');
    }
    for (const op of ['a2a.GetTask', 'a2a.ListTasks', 'a2a.GetExtendedAgentCard', 'grpc.Subscribe', 'sse.subscribe', 'mcp.session'] as const) {
      expect(OPERATION_SCOPES[op], op).toBe('read');
    }
    expect(OPERATION_SCOPES['services.manage']).toBe('admin');
    expect(a2aOperation('SendMessage')).toBe('a2a.SendMessage');
    expect(a2aOperation('endpoint')).toBeUndefined();
    expect(a2aOperation('__proto__')).toBeUndefined();
  });
});

describe('credential verifiers', () => {
  it('asks the configured keys, then each extra verifier in order; an async one decides when it recognises the credential', async () => {
    const jwt: CredentialVerifier = async (presented) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      const token = /^Bearer (jwt\.\S+)$/.exec(String(presented.headers.authorization ?? ''))?.[1];
      if (!token) return undefined;
      return { id: `sub-${token.slice(4)}`, scopes: new Set(['read', 'write'] as const) };
    };
    const edge = admission([jwt]);
    expect((await edge.admit('http.read', { headers: { 'x-api-key': 'alice-key' } })).id).toBe('alice');
    expect((await edge.admit('grpc.SubmitCommand', { headers: { authorization: 'Bearer jwt.bob' } })).id).toBe('sub-bob');
    expect(await refusal(edge.admit('grpc.SubmitCommand', { headers: { 'x-api-key': 'alice-key' } }))).toBe('FORBIDDEN');
    expect(await refusal(edge.admit('http.read', { headers: {} }))).toBe('UNAUTHENTICATED');
    // A configured-key carrier with a wrong key is refused by the key verifier: no fall-through.
    expect(await refusal(edge.admit('http.read', { headers: { 'x-api-key': 'nope' } }))).toBe('UNAUTHENTICATED');
  });

  it('with auth.type none every caller is the anonymous principal, which only the global bound limits', async () => {
    const edge = new Admission({
      config: { auth: { ...auth, type: 'none' }, sse: { maxConnections: 3, maxConnectionsPerPrincipal: 1 } as never, mcp: { maxSessions: 1, maxSessionsPerPrincipal: 1 } as never },
      metrics: NO_ADMISSION_METRICS,
    });
    expect(await edge.admit('http.write', { headers: {} })).toBe(ANONYMOUS);
    const slots = [edge.streams.take(ANONYMOUS), edge.streams.take(ANONYMOUS), edge.streams.take(ANONYMOUS)];
    expect(() => edge.streams.take(ANONYMOUS)).toThrow(/at most 3 streams/);
    slots[0].release();
    slots[0].release();
    expect(edge.streams.size).toBe(2);
  });
});

const KEYS = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }`;

describe('one stream pool across SSE, gRPC Subscribe and MCP streams', () => {
  it('with sse.maxConnections 4 one key gets at most 2 streams (any transport) and another key still gets its stream', async () => {
    const gw = await startTestGateway(gatewayYaml(`${KEYS}
sse: { maxConnections: 4 }
grpc: { host: 127.0.0.1, port: 0 }`));
    expect(gw.config.sse.maxConnectionsPerPrincipal).toBe(2);
    const sse = await openLive(`${gw.url}events/stream`, { 'x-api-key': 'alice-key' });
    const client = grpcClient(gw.grpc!.port);
    const sub = subscribe(client, {}, keyMetadata('alice-key'));
    await eventually(async () => (await metricValue(gw, 'proto_gateway_quota_slots', { quota: 'streams' })) === 2);
    // Alice's third stream is refused on SSE and on gRPC alike.
    const third = await openStream(`${gw.url}events/stream`, { 'x-api-key': 'alice-key' });
    expect(third.status).toBe(429);
    expect(JSON.parse(await new Response(third.body as never).text()).error.code).toBe('TOO_MANY_STREAMS');
    const grpcThird = subscribe(client, {}, keyMetadata('alice-key'));
    await eventually(() => grpcThird.error());
    expect(grpcThird.error()!.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(grpcThird.error()!.details).toMatch(/per caller/);
    // Bob still gets his.
    const bobs = await openLive(`${gw.url}events/stream`, { 'x-api-key': 'bob-key' });
    expect(bobs.status).toBe(200);
    expect(await metricValue(gw, 'proto_gateway_quota_refusals_total', { quota: 'streams', limit: 'principal' })).toBe(2);
    // Ending a stream gives the slot back.
    sse.close();
    sub.call.cancel();
    await eventually(async () => (await metricValue(gw, 'proto_gateway_quota_slots', { quota: 'streams' })) === 1);
    const again = await openLive(`${gw.url}events/stream`, { 'x-api-key': 'alice-key' });
    expect(again.status).toBe(200);
    bobs.close();
    again.close();
  });
});

describe('the shared stream pool full is overload: 503 (gRPC UNAVAILABLE), a caller over its share 429', () => {
  it('with sse.maxConnections 2 held by alice, bob is refused on SSE (503 STREAMS_EXHAUSTED, Retry-After), gRPC Subscribe (UNAVAILABLE) and an MCP stream (503)', async () => {
    const gw = await startTestGateway(gatewayYaml(`${KEYS}
sse: { maxConnections: 2, maxConnectionsPerPrincipal: 2 }
grpc: { host: 127.0.0.1, port: 0 }`));
    const held = [await openLive(`${gw.url}events/stream`, { 'x-api-key': 'alice-key' }), await openLive(`${gw.url}events/stream`, { 'x-api-key': 'alice-key' })];
    const sse = await getJson(`${gw.url}events/stream`, { headers: { 'x-api-key': 'bob-key' } });
    expect(sse.status).toBe(503);
    expect(sse.headers.get('retry-after')).toBe('5');
    expect(sse.body.error).toMatchObject({ code: 'STREAMS_EXHAUSTED', details: { limit: 'maxConnections', max: 2 } });
    const sub = subscribe(grpcClient(gw.grpc!.port), {}, keyMetadata('bob-key'));
    await eventually(() => sub.error());
    expect(sub.error()!.code).toBe(grpc.status.UNAVAILABLE);
    expect(sub.error()!.metadata.get('proto-error-code')).toEqual(['STREAMS_EXHAUSTED']);
    const mcp = await connect(gw, { 'X-API-Key': 'bob-key' }, false);
    const stream = await fetch(`${gw.url}mcp`, {
      headers: { 'x-api-key': 'bob-key', accept: 'text/event-stream', 'mcp-session-id': mcp.transport.sessionId!, 'mcp-protocol-version': '2025-06-18' },
    });
    expect(stream.status).toBe(503);
    expect(JSON.stringify(await stream.json())).toContain('STREAMS_EXHAUSTED');
    expect(await metricValue(gw, 'proto_gateway_quota_refusals_total', { quota: 'streams', limit: 'global' })).toBeGreaterThanOrEqual(3);
    for (const s of held) s.close();
  });
});

describe('MCP sessions per principal', () => {
  it('with mcp.maxSessions 4 one key opens at most 2 sessions (429 QUOTA_EXCEEDED), another key still opens one', async () => {
    const gw = await startTestGateway(gatewayYaml(`${KEYS}\nmcp: { enabled: true, maxSessions: 4 }`));
    await connect(gw, { 'X-API-Key': 'alice-key' }, false);
    await connect(gw, { 'X-API-Key': 'alice-key' }, false);
    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
    const refused = await getJson(`${gw.url}mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'x-api-key': 'alice-key' },
      body: JSON.stringify(init),
    });
    expect(refused.status).toBe(429);
    expect(refused.body.error).toMatchObject({ code: 'QUOTA_EXCEEDED', details: { limit: 'mcp.maxSessionsPerPrincipal', max: 2 } });
    await connect(gw, { 'X-API-Key': 'bob-key' }, false);
    expect(await metricValue(gw, 'proto_gateway_quota_refusals_total', { quota: 'mcp.sessions', limit: 'principal' })).toBe(1);
  });

  it('a read-only key cannot send a command through MCP (send_command needs write)', async () => {
    const gw = await startTestGateway(gatewayYaml(`${KEYS}\nmcp: { enabled: true }`));
    const { client } = await connect(gw, { 'X-API-Key': 'read-key' }, false);
    const result: any = await client.callTool({ name: 'send_command', arguments: { schema: 'x', version: '1.0', data: {} } });
    expect(result.isError).toBe(true);
    expect(result.content[0].text).toMatch(/FORBIDDEN|write/);
  });
});

describe('A2A methods by the operations table', () => {
  const rpc = (gw: { url: string }, key: string, method: string, params: unknown) =>
    getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': key },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });

  it('a read-only key may list tasks but not send messages or register push configs (403 FORBIDDEN)', async () => {
    const gw = await startTestGateway(gatewayYaml(KEYS));
    expect((await rpc(gw, 'read-key', 'ListTasks', {})).status).toBe(200);
    for (const method of ['SendMessage', 'SendStreamingMessage', 'CreateTaskPushNotificationConfig']) {
      const res = await rpc(gw, 'read-key', method, { taskId: 't', pushNotificationConfig: { url: 'https://example.invalid/' } });
      expect(res.status, method).toBe(403);
      expect(res.body, method).toMatchObject({ jsonrpc: '2.0', id: 1, error: { code: -32000, data: { code: 'FORBIDDEN', details: { scope: 'write' } } } });
    }
  });
});
