/**
 * The A2A endpoint as clients that know nothing of the gateway's conventions use it: a text
 * message gets a task (input-required, listing the skills), the same task continues with a
 * command and is followed to its end; cancel, get, list, subscribe and push configs work on such a
 * task. Both through the SDK client and as raw JSON-RPC POSTs.
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { Role, TaskState, type Message, type Part, type StreamResponse, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { exampleBackends, FAST_DISPATCH, ordersBackend } from '../../commands/support.ts';

afterEach(closeAll);

async function gatewayWithClient(extra = '') {
  const { orders } = await exampleBackends();
  const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\na2a: { settle: 300ms, timeout: 20s }\n${extra}backends:\n${ordersBackend(orders.url)}`));
  const client = await new ClientFactory().createFromUrl(gw.url);
  return { gw, orders, client };
}

function part(content: Part['content']): Part {
  return { content, metadata: undefined, filename: '', mediaType: content?.$case === 'data' ? 'application/json' : 'text/plain' };
}

function message(parts: Part[], continues?: { taskId: string; contextId: string }): Message {
  return {
    messageId: randomUUID(), contextId: continues?.contextId ?? '', taskId: continues?.taskId ?? '', role: Role.ROLE_USER,
    parts, metadata: undefined, extensions: [], referenceTaskIds: [],
  };
}

function send(parts: Part[], continues?: { taskId: string; contextId: string }) {
  return { tenant: '', message: message(parts, continues), configuration: undefined, metadata: undefined };
}

const TEXT = [part({ $case: 'text', value: 'hello, what can you do?' })];
const PLACE_ORDER = [part({ $case: 'data', value: { type: 'PlaceOrder', data: { sku: 'widget', qty: 2 } } })];

function statusParts(task: Task): Part[] {
  return task.status?.message?.parts ?? [];
}

async function inputRequiredTask(client: Client): Promise<Task> {
  const result = await client.sendMessage(send(TEXT));
  expect('status' in result, 'a task, not a message').toBe(true);
  return result as Task;
}

/** POSTs one raw JSON-RPC body to /a2a. */
async function rpc(url: string, body: string | object, headers: Record<string, string> = {}) {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  return getJson(`${url}a2a`, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...headers }, body: text });
}

describe('every A2A message creates or continues a task (SDK client)', () => {
  it('a text message is a task in INPUT_REQUIRED listing the skills and the data part expected', async () => {
    const { client } = await gatewayWithClient();
    const task = await inputRequiredTask(client);
    expect(task.id).not.toBe('');
    expect(task.contextId).not.toBe('');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const [text, data] = statusParts(task);
    expect(text?.content?.$case === 'text' ? text.content.value : '').toContain('PlaceOrder (place-order 1.0, orders)');
    expect(data?.content).toMatchObject({
      $case: 'data',
      value: { expectedDataPart: { type: '<CommandType>' }, commandTypes: [{ type: 'PlaceOrder', schema: 'place-order', version: '1.0', backend: 'orders' }] },
    });
    const again = await client.getTask({ tenant: '', id: task.id });
    expect(again.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
  });

  it('the same task continues with a command and is followed to COMPLETED, history holding both messages', async () => {
    const { client, orders } = await gatewayWithClient();
    const task = await inputRequiredTask(client);
    const done = (await client.sendMessage(send(PLACE_ORDER, { taskId: task.id, contextId: task.contextId }))) as Task;
    expect(done.id).toBe(task.id);
    expect(done.contextId).toBe(task.contextId);
    expect(done.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(done.artifacts.map((a) => a.name)).toEqual(['OrderPlacedV1']);
    expect([...orders.orders.values()].filter((o) => o.requestId !== undefined)).toHaveLength(1);
    const stored = await client.getTask({ tenant: '', id: task.id });
    expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const userParts = stored.history.filter((m) => m.role === Role.ROLE_USER).map((m) => m.parts[0]?.content?.$case);
    expect(userParts).toEqual(['text', 'data']);
    const listed = await client.listTasks({ tenant: '', contextId: task.contextId, status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    expect(listed.tasks.map((t) => t.id)).toEqual([task.id]);
  });

  it('streaming: a text message streams the task then INPUT_REQUIRED; the streamed continuation ends COMPLETED', async () => {
    const { client } = await gatewayWithClient();
    const first: StreamResponse[] = [];
    for await (const item of client.sendMessageStream(send(TEXT))) first.push(item);
    expect(first[0]?.payload?.$case).toBe('task');
    const last = first.at(-1)?.payload;
    expect(last?.$case === 'statusUpdate' ? last.value.status?.state : undefined).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const task = first[0]?.payload?.$case === 'task' ? first[0].payload.value : undefined;
    const states: Array<TaskState | string> = [];
    for await (const item of client.sendMessageStream(send(PLACE_ORDER, { taskId: task!.id, contextId: task!.contextId }))) {
      const p = item.payload;
      if (p?.$case === 'task') states.push(p.value.status!.state);
      if (p?.$case === 'statusUpdate') states.push(p.value.status!.state);
      if (p?.$case === 'artifactUpdate') states.push(p.value.artifact!.name);
    }
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_WORKING, 'OrderPlacedV1', TaskState.TASK_STATE_COMPLETED]);
  });

  it('another text message in the task keeps it INPUT_REQUIRED; a data part without "type" says so', async () => {
    const { client } = await gatewayWithClient();
    const task = await inputRequiredTask(client);
    const again = (await client.sendMessage(send([part({ $case: 'data', value: { sku: 'widget' } })], { taskId: task.id, contextId: task.contextId }))) as Task;
    expect(again.id).toBe(task.id);
    expect(again.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const text = statusParts(again)[0]?.content;
    expect(text?.$case === 'text' ? text.value : '').toContain('The data part has no "type"');
  });

  it('an INPUT_REQUIRED task can be cancelled, and then takes no further message', async () => {
    const { client, orders } = await gatewayWithClient();
    const task = await inputRequiredTask(client);
    const cancelled = await client.cancelTask({ tenant: '', id: task.id, metadata: undefined });
    expect(cancelled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await expect(client.sendMessage(send(PLACE_ORDER, { taskId: task.id, contextId: task.contextId }))).rejects.toThrow(/terminal state/);
    expect([...orders.orders.values()].filter((o) => o.requestId !== undefined)).toEqual([]);
  });

  it('SubscribeToTask on an INPUT_REQUIRED task answers the task', async () => {
    const { client } = await gatewayWithClient();
    const task = await inputRequiredTask(client);
    const seen: StreamResponse[] = [];
    for await (const item of client.resubscribeTask({ tenant: '', id: task.id })) seen.push(item);
    expect(seen[0]?.payload).toMatchObject({ $case: 'task', value: { id: task.id, status: { state: TaskState.TASK_STATE_INPUT_REQUIRED } } });
  });

  it('push configs on an INPUT_REQUIRED task: created, read, listed, and the continuation notifies them to COMPLETED', async () => {
    const got: string[] = [];
    const receiver = createServer((req, res) => {
      let text = '';
      req.on('data', (c) => { text += c; });
      req.on('end', () => { got.push(text); res.writeHead(200).end(); });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hook`;
      const { client } = await gatewayWithClient('webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8] }\n');
      const task = await inputRequiredTask(client);
      const config = { tenant: '', id: 'cfg-1', taskId: task.id, url, token: 'tok', authentication: undefined };
      expect(await client.createTaskPushNotificationConfig(config)).toMatchObject({ id: 'cfg-1', url });
      expect(await client.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'cfg-1' })).toMatchObject({ url });
      const listed = await client.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
      expect(listed.configs.map((c) => c.id)).toEqual(['cfg-1']);
      await client.sendMessage(send(PLACE_ORDER, { taskId: task.id, contextId: task.contextId }));
      await eventually(() => got.some((body) => body.includes('TASK_STATE_COMPLETED')) || undefined);
      expect(got.join('\n')).toContain(task.id);
    } finally {
      await new Promise<void>((resolve) => receiver.close(() => resolve()));
    }
  });
});

describe('A2A as raw JSON-RPC (a generic client)', () => {
  it('text, then the same task continued with a command, followed with GetTask to COMPLETED', async () => {
    const { gw } = await gatewayWithClient();
    const first = await rpc(gw.url, { jsonrpc: '2.0', id: 'a', method: 'SendMessage', params: { message: { messageId: 'm-1', role: 'ROLE_USER', parts: [{ text: 'hi' }] } } });
    expect(first.status).toBe(200);
    const task = first.body.result.task;
    expect(task.status.state).toBe('TASK_STATE_INPUT_REQUIRED');
    const second = await rpc(gw.url, {
      jsonrpc: '2.0', id: 'b', method: 'SendMessage',
      params: { message: { messageId: 'm-2', role: 'ROLE_USER', taskId: task.id, contextId: task.contextId, parts: [{ data: { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } } }] } },
    });
    expect(second.body.id).toBe('b');
    expect(second.body.result.task).toMatchObject({ id: task.id, status: { state: 'TASK_STATE_COMPLETED' } });
    const got = await rpc(gw.url, { jsonrpc: '2.0', id: 3, method: 'GetTask', params: { id: task.id, historyLength: 1 } });
    expect(got.body.result.status.state).toBe('TASK_STATE_COMPLETED');
    expect(got.body.result.history).toHaveLength(1);
  });

  const cases: Array<[string, string | object, number, string | number | null]> = [
    ['not JSON', '{"jsonrpc":', -32700, null],
    ['an empty body', '', -32700, null],
    ['a batch', [{ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'x' } }], -32600, null],
    ['an empty batch', [], -32600, null],
    ['a string', '"SendMessage"', -32600, null],
    ['no jsonrpc member', { id: 1, method: 'GetTask', params: { id: 'x' } }, -32600, 1],
    ['jsonrpc 1.0', { jsonrpc: '1.0', id: 2, method: 'GetTask', params: { id: 'x' } }, -32600, 2],
    ['no method', { jsonrpc: '2.0', id: 3, params: {} }, -32600, 3],
    ['a method that is not a string', { jsonrpc: '2.0', id: 4, method: 42 }, -32600, 4],
    ['an object id', { jsonrpc: '2.0', id: { a: 1 }, method: 'GetTask', params: { id: 'x' } }, -32600, null],
    ['no id (a notification)', { jsonrpc: '2.0', method: 'GetTask', params: { id: 'x' } }, -32600, null],
    ['params that are a number', { jsonrpc: '2.0', id: 5, method: 'GetTask', params: 5 }, -32600, 5],
    ['an unknown method', { jsonrpc: '2.0', id: 6, method: 'tasks/launch', params: {} }, -32601, 6],
    ['an unknown method with bad params', { jsonrpc: '2.0', id: 7, method: 'NoSuch', params: [] }, -32601, 7],
    ['by-position params', { jsonrpc: '2.0', id: 8, method: 'GetTask', params: ['x'] }, -32602, 8],
    ['a negative historyLength', { jsonrpc: '2.0', id: 9, method: 'GetTask', params: { id: 'x', historyLength: -1 } }, -32602, 9],
    ['a negative ListTasks historyLength', { jsonrpc: '2.0', id: 10, method: 'ListTasks', params: { historyLength: -1 } }, -32602, 10],
    ['a fractional historyLength', { jsonrpc: '2.0', id: 11, method: 'SendMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }] }, configuration: { historyLength: 1.5 } } }, -32602, 11],
    ['a message that is not an object', { jsonrpc: '2.0', id: 12, method: 'SendMessage', params: { message: 42 } }, -32602, 12],
    ['null among the parts (the SDK decoder threw: was -32603)', { jsonrpc: '2.0', id: 16, method: 'SendMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [null] } } }, -32602, 16],
    ['null among a push config list', { jsonrpc: '2.0', id: 17, method: 'SendStreamingMessage', params: { message: { messageId: 'm', role: 'ROLE_USER', parts: [{ text: 'x' }, null] } } }, -32602, 17],
    ['an unknown task', { jsonrpc: '2.0', id: 13, method: 'GetTask', params: { id: 'no-such-task' } }, -32001, 13],
    ['a page token not issued', { jsonrpc: '2.0', id: 14, method: 'ListTasks', params: { pageToken: '50' } }, -32602, 14],
    ['subscribing to an unknown task', { jsonrpc: '2.0', id: 15, method: 'SubscribeToTask', params: { id: 'no-such-task' } }, -32001, 15],
  ];
  it.each(cases.map(([name, body, code, id]) => ({ name, body, code, id })))('$name: JSON-RPC error $code with HTTP 200, id echoed when valid', async ({ body, code, id }) => {
    const { gw } = await gatewayWithClient();
    const answer = await rpc(gw.url, body);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ jsonrpc: '2.0', id, error: { code, message: expect.any(String) } });
  });

  it('the -32602 for a page token and for historyLength says which parameter', async () => {
    const { gw } = await gatewayWithClient();
    expect((await rpc(gw.url, { jsonrpc: '2.0', id: 1, method: 'ListTasks', params: { pageToken: 'x' } })).body.error.message).toMatch(/pageToken/);
    expect((await rpc(gw.url, { jsonrpc: '2.0', id: 2, method: 'ListTasks', params: { historyLength: -3 } })).body.error.message).toMatch(/historyLength/);
  });

  it('ListTasks pages with the opaque token it issued, and refuses it for other filters', async () => {
    const { gw } = await gatewayWithClient();
    for (let i = 0; i < 3; i++) await rpc(gw.url, { jsonrpc: '2.0', id: i, method: 'SendMessage', params: { message: { messageId: `m-${i}`, role: 'ROLE_USER', parts: [{ text: 'hi' }] } } });
    const first = (await rpc(gw.url, { jsonrpc: '2.0', id: 'p1', method: 'ListTasks', params: { pageSize: 2 } })).body.result;
    expect(first.tasks).toHaveLength(2);
    const second = (await rpc(gw.url, { jsonrpc: '2.0', id: 'p2', method: 'ListTasks', params: { pageSize: 2, pageToken: first.nextPageToken } })).body.result;
    expect(second.tasks).toHaveLength(1);
    expect(new Set([...first.tasks, ...second.tasks].map((t: { id: string }) => t.id)).size).toBe(3);
    const other = await rpc(gw.url, { jsonrpc: '2.0', id: 'p3', method: 'ListTasks', params: { pageSize: 2, pageToken: first.nextPageToken, status: 'TASK_STATE_COMPLETED' } });
    expect(other.body.error).toMatchObject({ code: -32602, message: expect.stringMatching(/other filters/) });
  });
});

describe('A2A endpoint under generated hostile requests', () => {
  /** A small seeded generator (mulberry32): the same inputs on every run. */
  function generator(seed: number) {
    let state = seed;
    const next = (): number => {
      state = (state + 0x6d2b79f5) | 0;
      let t = Math.imul(state ^ (state >>> 15), 1 | state);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    const pick = <T>(items: T[]): T => items[Math.floor(next() * items.length)]!;
    const value = (depth: number): unknown => {
      const kinds = depth > 2 ? ['null', 'bool', 'num', 'str'] : ['null', 'bool', 'num', 'str', 'arr', 'obj', 'obj'];
      switch (pick(kinds)) {
        case 'null': return null;
        case 'bool': return next() < 0.5;
        case 'num': return pick([0, -1, 1.5, 1e21, -2147483649, Number.MAX_SAFE_INTEGER]);
        case 'str': return pick(['', 'x', '../', 'TASK_STATE_WORKING', 'ROLE_USER', '\u0000', 'a'.repeat(300)]);
        case 'arr': return Array.from({ length: Math.floor(next() * 3) }, () => value(depth + 1));
        default: {
          const keys = ['message', 'parts', 'text', 'data', 'taskId', 'contextId', 'id', 'historyLength', 'pageSize', 'pageToken', 'configuration', 'role', 'messageId', 'status', 'url', 'metadata'];
          return Object.fromEntries(Array.from({ length: 1 + Math.floor(next() * 4) }, () => [pick(keys), value(depth + 1)]));
        }
      }
    };
    return { pick, value };
  }

  it('every generated request is answered with a JSON-RPC response (never a 500, never an internal error)', async () => {
    const { gw } = await gatewayWithClient();
    const { pick, value } = generator(26);
    const methods = ['SendMessage', 'GetTask', 'ListTasks', 'CancelTask', 'SubscribeToTask', 'SendStreamingMessage', 'CreateTaskPushNotificationConfig', 'GetTaskPushNotificationConfig', 'ListTaskPushNotificationConfigs', 'DeleteTaskPushNotificationConfig'];
    for (let i = 0; i < 150; i++) {
      const params = i % 3 === 0 ? { message: { messageId: `m-${i}`, role: 'ROLE_USER', parts: [value(2), { text: 'x' }] } } : value(0);
      const valid = { jsonrpc: '2.0', id: i, method: pick(methods), params };
      const body = i % 5 === 0 ? { ...valid, [pick(['jsonrpc', 'id', 'method', 'params'])]: value(1) } : valid;
      const res = await fetch(`${gw.url}a2a`, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body: JSON.stringify(body) });
      const text = await res.text();
      expect(res.status, text).toBe(200);
      // A stream that began is SSE; everything else is one JSON-RPC response.
      if (res.headers.get('content-type')?.startsWith('text/event-stream')) continue;
      const answer = JSON.parse(text);
      expect(answer.jsonrpc, JSON.stringify(body)).toBe('2.0');
      if (answer.error) expect(answer.error.code, `${JSON.stringify(body)} → ${text}`).not.toBe(-32603);
    }
  }, 120_000);
});
