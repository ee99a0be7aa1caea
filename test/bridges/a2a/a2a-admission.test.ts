/**
 * A2A through the one admission path, as the SDK's own client meets it: every refusal of `/a2a`
 * is a JSON-RPC error object (the gateway's refusals: -32000 with the catalogue error as `data`,
 * with their HTTP status 401/403/429/503), and the per-principal quotas of tasks and push configs.
 */
import { randomUUID } from 'node:crypto';
import { Role, type Message, type Part } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { exampleBackends, FAST_DISPATCH, ordersBackend } from '../../commands/support.ts';
import { openLive } from '../sse/support.ts';

afterEach(closeAll);

const KEYS = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }
    - { id: reader, key: read-key, scopes: [read] }
`;

async function gateway(extra = '', a2a = ''): Promise<Gateway> {
  const { orders } = await exampleBackends();
  return startTestGateway(gatewayYaml(`${FAST_DISPATCH}\na2a: { settle: 300ms, timeout: 20s${a2a} }\n${KEYS}${extra}backends:\n${ordersBackend(orders.url)}`));
}

/** The SDK's client, sending `key` (or nothing) on every call. */
async function clientOf(gw: Gateway, key?: string): Promise<Client> {
  const fetchImpl: typeof fetch = (input, init) => {
    const headers = new Headers(init?.headers);
    if (key) headers.set('x-api-key', key);
    return fetch(input, { ...init, headers });
  };
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, { transports: [new JsonRpcTransportFactory({ fetchImpl })] });
  return new ClientFactory(options).createFromUrl(gw.url);
}

function part(content: Part['content']): Part {
  return { content, metadata: undefined, filename: '', mediaType: content?.$case === 'data' ? 'application/json' : 'text/plain' };
}

function message(text = 'hello'): Message {
  return { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts: [part({ $case: 'text', value: text })], metadata: undefined, extensions: [], referenceTaskIds: [] };
}

function send(text?: string) {
  return { tenant: '', message: message(text), configuration: undefined, metadata: undefined };
}

/** What the SDK client threw: the JSON-RPC error it parsed (`envelopeCode`, `data`), or the bare message. */
async function thrown(promise: Promise<unknown>): Promise<{ envelopeCode?: unknown; data?: { code?: string; details?: Record<string, unknown> }; message: string }> {
  try {
    await promise;
  } catch (err) {
    const e = err as { envelopeCode?: unknown; data?: { code?: string }; message: string };
    return { envelopeCode: e.envelopeCode, data: e.data, message: e.message };
  }
  throw new Error('the call was not refused');
}

/** Drains a streaming call (its refusal surfaces on the first step). */
async function drain(stream: AsyncGenerator<unknown>): Promise<void> {
  for await (const _ of stream) break;
}

describe('A2A refusals are JSON-RPC errors (the SDK client)', () => {
  it('no key: HTTP 401 with WWW-Authenticate and a JSON-RPC error the SDK client parses (data.code UNAUTHENTICATED)', async () => {
    const gw = await gateway();
    const raw = await getJson(`${gw.url}a2a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'ListTasks', params: {} }) });
    expect(raw.status).toBe(401);
    expect(raw.headers.get('www-authenticate')).toBeTruthy();
    expect(raw.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32000, data: { code: 'UNAUTHENTICATED' } } });
    const refused = await thrown((await clientOf(gw)).listTasks({ tenant: '', contextId: '', status: 0, pageSize: 0, pageToken: '', historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: false } as never));
    expect(refused).toMatchObject({ envelopeCode: -32000, data: { code: 'UNAUTHENTICATED' } });
  });

  it('a read-only key: SendMessage and SendStreamingMessage are HTTP 403 with a JSON-RPC error carrying the request id and data.code FORBIDDEN', async () => {
    const gw = await gateway();
    const reader = await clientOf(gw, 'read-key');
    expect(await thrown(reader.sendMessage(send()))).toMatchObject({ envelopeCode: -32000, data: { code: 'FORBIDDEN', details: { scope: 'write' } } });
    expect(await thrown(drain(reader.sendMessageStream(send())))).toMatchObject({ envelopeCode: -32000, data: { code: 'FORBIDDEN' } });
    const raw = await getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': 'read-key' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'req-9', method: 'CreateTaskPushNotificationConfig', params: { taskId: 't', url: 'https://example.invalid/' } }),
    });
    expect(raw.status).toBe(403);
    expect(raw.body).toMatchObject({ jsonrpc: '2.0', id: 'req-9', error: { code: -32000, data: { code: 'FORBIDDEN' } } });
  });

  it('a body over server.bodyLimit is HTTP 413 with a JSON-RPC error (data.code PAYLOAD_TOO_LARGE)', async () => {
    const gw = await gateway();
    const raw = await getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': 'alice-key' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { parts: [{ text: 'x'.repeat(gw.config.server.bodyLimitBytes + 1) }] } } }),
    });
    expect(raw.status).toBe(413);
    expect(raw.body).toMatchObject({ jsonrpc: '2.0', error: { code: -32000, data: { code: 'PAYLOAD_TOO_LARGE' } } });
  });

  it('a streaming call refused by the full stream pool is HTTP 503 STREAMS_EXHAUSTED with Retry-After; over the caller share 429 TOO_MANY_STREAMS', async () => {
    const gw = await gateway('sse: { maxConnections: 2, maxConnectionsPerPrincipal: 1 }\n');
    const alices = await openLive(`${gw.url}events/stream`, { 'x-api-key': 'alice-key' });
    expect(alices.status).toBe(200);
    const alice = await clientOf(gw, 'alice-key');
    expect(await thrown(drain(alice.sendMessageStream(send())))).toMatchObject({ envelopeCode: -32000, data: { code: 'TOO_MANY_STREAMS' } });
    const bobs = await openLive(`${gw.url}events/stream`, { 'x-api-key': 'bob-key' });
    expect(bobs.status).toBe(200);
    const raw = await fetch(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'a2a-version': '1.0', 'x-api-key': 'alice-key' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'SendStreamingMessage', params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
    });
    expect(raw.status).toBe(503);
    expect(raw.headers.get('retry-after')).toBe('5');
    expect(await raw.json()).toMatchObject({ jsonrpc: '2.0', id: 3, error: { code: -32000, data: { code: 'STREAMS_EXHAUSTED', details: { limit: 'maxConnections' } } } });
    alices.close();
    bobs.close();
  });
});
