/**
 * A2A through the one admission path, as the SDK's own client meets it: every refusal of `/a2a`
 * is a JSON-RPC error object (the gateway's refusals: -32000 with the catalogue error as `data`,
 * with their HTTP status 401/403/429/503), and the per-principal quotas of tasks and push configs.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Role, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import type { Gateway } from '../../../src/app.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, track } from '../../support/gateway.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { exampleBackends, FAST_DISPATCH, ordersBackend } from '../../commands/support.ts';
import { metricValue, openLive } from '../sse/support.ts';

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

/** Counts what reaches a push receiver on loopback. */
async function pushReceiver() {
  const got: string[] = [];
  const receiver = createServer((req, res) => {
    let text = '';
    req.on('data', (c) => { text += c; });
    req.on('end', () => { got.push(text); res.writeHead(200).end(); });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => receiver.close(() => resolve())) });
  return { got, url: `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook` };
}

const PUSH_OK = 'webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8] }\n';

function pushConfig(taskId: string, id: string, url = 'https://example.invalid/hook', token = '') {
  return { tenant: '', id, taskId, url, token, authentication: undefined };
}

async function newTask(client: Client): Promise<Task> {
  const result = await client.sendMessage(send());
  expect('status' in result).toBe(true);
  return result as Task;
}

describe('A2A tasks per principal (a2a.maxTasksPerPrincipal)', () => {
  it('with a2a.maxTasks 4 a key keeps at most 2 tasks: its third new task is 429 QUOTA_EXCEEDED (nothing stored), another key still creates one, a kept task still continues', async () => {
    const gw = await gateway('', ', maxTasks: 4');
    expect(gw.config.a2a.maxTasksPerPrincipal).toBe(2);
    const alice = await clientOf(gw, 'alice-key');
    const first = await newTask(alice);
    await newTask(alice);
    const refused = await thrown(alice.sendMessage(send()));
    expect(refused).toMatchObject({ envelopeCode: -32000, data: { code: 'QUOTA_EXCEEDED', details: { limit: 'a2a.maxTasksPerPrincipal', max: 2 } } });
    expect(await thrown(drain(alice.sendMessageStream(send())))).toMatchObject({ data: { code: 'QUOTA_EXCEEDED' } });
    const raw = await getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': 'alice-key' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 5, method: 'SendMessage', params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
    });
    expect(raw.status).toBe(429);
    expect(raw.body).toMatchObject({ jsonrpc: '2.0', id: 5, error: { code: -32000, data: { code: 'QUOTA_EXCEEDED' } } });
    const listed = await alice.listTasks({ tenant: '', contextId: '', status: 0, pageSize: 10, pageToken: '', historyLength: 0, statusTimestampAfter: undefined, includeArtifacts: false } as never);
    expect(listed.tasks).toHaveLength(2);
    // Continuing a kept task is no new task.
    const continued = await alice.sendMessage({ ...send('still here'), message: { ...message('still here'), taskId: first.id, contextId: first.contextId } });
    expect((continued as Task).id).toBe(first.id);
    // Bob's share is his own.
    expect((await newTask(await clientOf(gw, 'bob-key'))).id).toBeTruthy();
    expect(await metricValue(gw, 'proto_gateway_quota_refusals_total', { quota: 'a2a.tasks', limit: 'principal' })).toBe(3);
  });
});

describe('A2A push-notification configs (stored with the task, bounded)', () => {
  it('at most a2a.maxPushConfigsPerTask per task and a2a.maxPushConfigsPerPrincipal per key (429 QUOTA_EXCEEDED); a replacement is no new one; another key is unaffected', async () => {
    const gw = await gateway('', ', maxPushConfigsPerTask: 2, maxPushConfigsPerPrincipal: 3');
    const alice = await clientOf(gw, 'alice-key');
    const [t1, t2] = [await newTask(alice), await newTask(alice)];
    await alice.createTaskPushNotificationConfig(pushConfig(t1.id, 'a'));
    await alice.createTaskPushNotificationConfig(pushConfig(t1.id, 'b'));
    expect(await thrown(alice.createTaskPushNotificationConfig(pushConfig(t1.id, 'c')))).toMatchObject({
      envelopeCode: -32000, data: { code: 'QUOTA_EXCEEDED', details: { limit: 'a2a.maxPushConfigsPerTask', max: 2 } },
    });
    await alice.createTaskPushNotificationConfig(pushConfig(t1.id, 'b', 'https://example.invalid/other'));
    await alice.createTaskPushNotificationConfig(pushConfig(t2.id, 'c'));
    expect(await thrown(alice.createTaskPushNotificationConfig(pushConfig(t2.id, 'd')))).toMatchObject({
      data: { code: 'QUOTA_EXCEEDED', details: { limit: 'a2a.maxPushConfigsPerPrincipal', max: 3 } },
    });
    // A new task carrying a push config in SendMessage is refused the same way, before any command.
    const raw = await getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': 'alice-key' },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 'p', method: 'SendMessage',
        params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] }, configuration: { taskPushNotificationConfig: { id: 'e', url: 'https://example.invalid/e' } } },
      }),
    });
    expect(raw.status).toBe(429);
    expect(raw.body).toMatchObject({ id: 'p', error: { code: -32000, data: { code: 'QUOTA_EXCEEDED' } } });
    const listed = await alice.listTaskPushNotificationConfig({ tenant: '', taskId: t1.id, pageSize: 0, pageToken: '' });
    expect(listed.configs.map((c) => [c.id, c.url]).sort()).toEqual([['a', 'https://example.invalid/hook'], ['b', 'https://example.invalid/other']]);
    // Deleting one frees its room.
    await alice.deleteTaskPushNotificationConfig({ tenant: '', taskId: t1.id, id: 'a' });
    await alice.createTaskPushNotificationConfig(pushConfig(t2.id, 'd'));
    const bob = await clientOf(gw, 'bob-key');
    await bob.createTaskPushNotificationConfig(pushConfig((await newTask(bob)).id, 'a'));
    expect(await metricValue(gw, 'proto_gateway_quota_refusals_total', { quota: 'a2a.pushConfigs', limit: 'task' })).toBe(1);
    expect(await metricValue(gw, 'proto_gateway_quota_refusals_total', { quota: 'a2a.pushConfigs', limit: 'principal' })).toBe(2);
  });

  it('a config over 8 KiB of JSON (a huge token) is invalid params (-32602, HTTP 200), never stored', async () => {
    const gw = await gateway();
    const alice = await clientOf(gw, 'alice-key');
    const t1 = await newTask(alice);
    const refused = await thrown(alice.createTaskPushNotificationConfig(pushConfig(t1.id, 'big', undefined, 'x'.repeat(10_000))));
    expect(refused.envelopeCode ?? refused.message).toBe(-32602);
    const listed = await alice.listTaskPushNotificationConfig({ tenant: '', taskId: t1.id, pageSize: 0, pageToken: '' });
    expect(listed.configs).toEqual([]);
  });

  it('two gateways on one Redis prefix: a config registered through one is listed and posted to by the other, and the task quota counts both', async () => {
    const { orders } = await exampleBackends();
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const storage = `storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }`;
    const yaml = gatewayYaml(`${FAST_DISPATCH}\na2a: { settle: 300ms, timeout: 20s, maxTasks: 4 }\n${KEYS}${PUSH_OK}backends:\n${ordersBackend(orders.url)}`, storage);
    const [a, b] = [await startTestGateway(yaml), await startTestGateway(yaml)];
    const { got, url } = await pushReceiver();
    const onA = await clientOf(a, 'alice-key');
    const onB = await clientOf(b, 'alice-key');
    const task = await newTask(onA);
    await onA.createTaskPushNotificationConfig(pushConfig(task.id, 'cfg', url, 'tok'));
    expect((await onB.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' })).configs.map((c) => c.id)).toEqual(['cfg']);
    const command = { ...message(), taskId: task.id, contextId: task.contextId, parts: [part({ $case: 'data', value: { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } } })] };
    await onB.sendMessage({ tenant: '', message: command, configuration: undefined, metadata: undefined });
    await eventually(() => got.some((body) => body.includes('TASK_STATE_COMPLETED')) || undefined);
    expect(got.join('\n')).toContain(task.id);
    // Alice's share of a2a.maxTasks 4 is 2 tasks, whichever replica holds them.
    await newTask(onB);
    expect(await thrown(onA.sendMessage(send()))).toMatchObject({ data: { code: 'QUOTA_EXCEEDED', details: { limit: 'a2a.maxTasksPerPrincipal' } } });
  });
});
