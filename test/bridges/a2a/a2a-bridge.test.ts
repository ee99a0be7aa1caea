import { randomUUID } from 'node:crypto';
import { AgentCard, Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { exampleBackends, FAST_DISPATCH, ordersBackend } from '../../commands/support.ts';

afterEach(closeAll);

/** A gateway in front of the example orders service, and an A2A client that knows only its URL. */
async function gatewayWithClient(extra = '') {
  const { orders } = await exampleBackends();
  const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\na2a: { settle: 300ms, timeout: 20s }\n${extra}backends:\n${ordersBackend(orders.url)}`));
  const client = await new ClientFactory().createFromUrl(gw.url);
  return { gw, orders, client };
}

function part(content: Part['content']): Part {
  return { content, metadata: undefined, filename: '', mediaType: content?.$case === 'data' ? 'application/json' : 'text/plain' };
}

function userMessage(parts: Part[]): Message {
  return { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

/** SendMessage params carrying one command as a data part. */
function commandRequest(command: unknown) {
  return { tenant: '', message: userMessage([part({ $case: 'data', value: command })]), configuration: undefined, metadata: undefined };
}

function statusText(task: Task): string {
  const first = task.status?.message?.parts[0]?.content;
  return first?.$case === 'text' ? first.value : '';
}

async function sendBlocking(client: Client, command: unknown): Promise<Task> {
  const result = await client.sendMessage(commandRequest(command));
  expect('status' in result).toBe(true);
  return result as Task;
}

describe('A2A agent card', () => {
  it('is public, names the JSON-RPC endpoint, streams; one skill per command type on the extended card only', async () => {
    const { gw, client } = await gatewayWithClient();
    const publicCard = AgentCard.fromJSON((await getJson(`${gw.url}.well-known/agent-card.json`)).body);
    expect(publicCard.name).toBe('proto-gateway');
    expect(publicCard.supportedInterfaces[0]).toMatchObject({ url: `${gw.url}a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    expect(publicCard.capabilities?.streaming).toBe(true);
    expect(publicCard.capabilities?.extendedAgentCard).toBe(true);
    expect(publicCard.skills).toEqual([]);
    const card = await client.getAgentCard(); // the SDK client reads the extended card when the public one announces it
    expect(card.skills).toEqual([expect.objectContaining({ id: 'place-order', name: 'PlaceOrder', description: 'Place an order', tags: expect.arrayContaining(['orders']) })]);
    expect(card.skills[0]?.examples[0]).toContain('"type":"PlaceOrder"');
    const { body } = await getJson(`${gw.url}.well-known/proto`);
    expect(body.PROTO.services['io.proto.agents'].a2a).toEqual({ agent_card_url: `${gw.url}.well-known/agent-card.json` });
  });

  it('leaves the catalogue out of the public card (a2a.publicSkills false) and gives it to read callers on the extended card only', async () => {
    const { gw } = await gatewayWithClient('auth: { type: apiKey, header: X-Api-Key, keys: [{ id: reader, key: r1, scopes: [read] }, { id: none, key: n1, scopes: [] }] }\n');
    const { body: publicCard } = await getJson(`${gw.url}.well-known/agent-card.json`);
    expect(publicCard.skills ?? []).toEqual([]);
    expect(JSON.stringify(publicCard)).not.toContain('PlaceOrder');
    const extended = (key?: string) => getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...(key && { 'x-api-key': key }) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetExtendedAgentCard', params: {} }),
    });
    expect((await extended()).status).toBe(401);
    expect((await extended('n1')).status).toBe(403);
    const { status, body } = await extended('r1');
    expect(status).toBe(200);
    expect(body.result.skills.map((s: { name: string }) => s.name)).toEqual(['PlaceOrder']);
  });

  it('with a2a.publicSkills true, the public card lists the skills', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`a2a: { publicSkills: true }\nbackends:\n${ordersBackend(orders.url)}`));
    const { body } = await getJson(`${gw.url}.well-known/agent-card.json`);
    expect(body.skills.map((s: { name: string }) => s.name)).toEqual(['PlaceOrder']);
  });

  it('declares the apiKey scheme of the auth config, and the endpoint refuses calls without a key', async () => {
    const { gw } = await gatewayWithClient('auth: { type: apiKey, header: X-Api-Key, keys: [{ id: agent, key: k1, scopes: [read, write] }] }\n');
    const { status, body } = await getJson(`${gw.url}.well-known/agent-card.json`);
    expect(status).toBe(200);
    expect(body.securitySchemes.apiKey).toMatchObject({ apiKeySecurityScheme: { name: 'X-Api-Key', location: 'header' } });
    const refused = await getJson(`${gw.url}a2a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(refused.status).toBe(401);
  });

  it('is absent from the manifest when a2a is disabled', async () => {
    const { orders } = await exampleBackends();
    const gw = await startTestGateway(gatewayYaml(`a2a: { enabled: false }\nbackends:\n${ordersBackend(orders.url)}`));
    const { body } = await getJson(`${gw.url}.well-known/proto`);
    expect(body.PROTO.services['io.proto.agents'].a2a).toBeUndefined();
    expect((await getJson(`${gw.url}.well-known/agent-card.json`)).status).toBe(404);
  });
});

describe('A2A tasks are commands, artifacts are their events', () => {
  it('streaming: SUBMITTED, WORKING, the correlated event as an artifact, then COMPLETED on the success type', async () => {
    const { client, orders } = await gatewayWithClient();
    const seen: Array<{ kind: string; state?: TaskState; artifact?: { name: string; event: any } }> = [];
    for await (const item of client.sendMessageStream(commandRequest({ type: 'PlaceOrder', data: { sku: 'widget', qty: 2 }, source: 'urn:test:agent' }))) {
      const payload = item.payload;
      if (payload?.$case === 'task') seen.push({ kind: 'task', state: payload.value.status?.state });
      if (payload?.$case === 'statusUpdate') seen.push({ kind: 'status', state: payload.value.status?.state });
      if (payload?.$case === 'artifactUpdate') {
        const content = payload.value.artifact?.parts[0]?.content;
        seen.push({ kind: 'artifact', artifact: { name: payload.value.artifact?.name ?? '', event: content?.$case === 'data' ? content.value : undefined } });
      }
    }
    expect(seen.map((s) => s.state ?? s.artifact?.name)).toEqual([
      TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING, 'OrderPlacedV1', TaskState.TASK_STATE_COMPLETED,
    ]);
    const event = seen[2]?.artifact?.event;
    expect(event).toMatchObject({ specversion: '1.0', type: 'OrderPlacedV1', source: 'urn:test:orders', data: { sku: 'widget', qty: 2 } });
    expect([...orders.orders.values()].map((o) => o.requestId)).toContain(event.correlationid);
  });

  it('non-streaming: a failure event ends the task FAILED, and GetTask answers it afterwards with its artifacts', async () => {
    const { client } = await gatewayWithClient();
    const task = await sendBlocking(client, { type: 'PlaceOrder', data: { sku: 'fail-x', qty: 1 } });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(task.artifacts.map((a) => a.name)).toEqual(['PlaceOrderFailedV1']);
    const again = await client.getTask({ tenant: '', id: task.id });
    expect(again.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(again.artifacts[0]?.parts[0]?.content).toMatchObject({ $case: 'data', value: { type: 'PlaceOrderFailedV1', data: { error: { code: 'COMMAND_NOT_ACCEPTED' } } } });
  });

  it('GetTask after completion: COMPLETED with the event, and ListTasks lists it', async () => {
    const { client } = await gatewayWithClient();
    const task = await sendBlocking(client, { type: 'PlaceOrder', data: { sku: 'gizmo', qty: 1 } });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const again = await client.getTask({ tenant: '', id: task.id });
    expect(again.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(again.artifacts.map((a) => a.name)).toEqual(['OrderPlacedV1']);
    const list = await client.listTasks({ tenant: '', contextId: '', status: TaskState.TASK_STATE_UNSPECIFIED, pageToken: '', statusTimestampAfter: undefined });
    expect(list.tasks.map((t) => t.id)).toContain(task.id);
  });

  it('an invalid command is REJECTED naming the violation, without reaching the backend', async () => {
    const { client, orders } = await gatewayWithClient();
    const task = await sendBlocking(client, { type: 'PlaceOrder', data: { sku: 'widget', qty: 0 } });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(statusText(task)).toMatch(/VALIDATION_FAILED.*qty/);
    // The example service starts with seed orders; none came from a command.
    expect([...orders.orders.values()].filter((o) => o.requestId !== undefined)).toEqual([]);
  });

  it('an unknown command type is REJECTED without reaching any backend', async () => {
    const { client, orders } = await gatewayWithClient();
    const task = await sendBlocking(client, { type: 'LaunchRocket', data: {} });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(statusText(task)).toContain('UNKNOWN_COMMAND_TYPE');
    // The example service starts with seed orders; none came from a command.
    expect([...orders.orders.values()].filter((o) => o.requestId !== undefined)).toEqual([]);
  });

  it('counts tasks by final state and artifacts sent', async () => {
    const { gw, client } = await gatewayWithClient();
    await sendBlocking(client, { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } });
    await sendBlocking(client, { type: 'LaunchRocket', data: {} });
    const metrics = await (await fetch(`${gw.url}metrics`)).text();
    expect(metrics).toMatch(/proto_gateway_a2a_tasks_total\{state="completed"\} 1/);
    expect(metrics).toMatch(/proto_gateway_a2a_tasks_total\{state="rejected"\} 1/);
    expect(metrics).toMatch(/proto_gateway_a2a_artifacts_total 1/);
  });
});

describe('A2A push notifications', () => {
  /** A loopback receiver recording each POST's headers and parsed body. */
  async function receiver() {
    const { createServer } = await import('node:http');
    const got: Array<{ headers: Record<string, unknown>; body: any }> = [];
    const server = createServer((req, res) => {
      let text = '';
      req.on('data', (chunk) => { text += chunk; });
      req.on('end', () => {
        got.push({ headers: req.headers, body: JSON.parse(text) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address() as { port: number };
    return { url: `http://127.0.0.1:${address.port}/hook`, got, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
  }

  function withPush(url: string, command: unknown) {
    return {
      ...commandRequest(command),
      configuration: { acceptedOutputModes: [], returnImmediately: false, taskPushNotificationConfig: { tenant: '', id: 'cfg-1', taskId: '', url, token: 'tok-1', authentication: undefined } },
    };
  }

  it('task updates reach the configured URL through the webhook client, with the token, ending COMPLETED', async () => {
    const hook = await receiver();
    try {
      const { client } = await gatewayWithClient('webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8] }\n');
      const task = (await client.sendMessage(withPush(hook.url, { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } }))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      await eventually(() => hook.got.some((g) => JSON.stringify(g.body).includes('TASK_STATE_COMPLETED')) || undefined);
      expect(hook.got.every((g) => g.headers['x-a2a-notification-token'] === 'tok-1')).toBe(true);
      expect(JSON.stringify(hook.got.map((g) => g.body))).toContain('OrderPlacedV1');
    } finally {
      await hook.close();
    }
  });

  it('a loopback URL is refused by the SSRF guard when private networks are not allowed', async () => {
    const hook = await receiver();
    try {
      const { gw, client } = await gatewayWithClient('webhooks: { allowHttp: true }\n');
      const task = (await client.sendMessage(withPush(hook.url, { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } }))) as Task;
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      await eventually(async () => /proto_gateway_a2a_push_notifications_total\{outcome="failed"\} [1-9]/.test(await (await fetch(`${gw.url}metrics`)).text()) || undefined);
      const metrics = await (await fetch(`${gw.url}metrics`)).text();
      expect(metrics).toMatch(/proto_gateway_webhook_ssrf_refusals_total\{reason="address"\} [1-9]/);
      expect(hook.got).toEqual([]);
    } finally {
      await hook.close();
    }
  });
});

describe('A2A endpoint input', () => {
  it('malformed JSON-RPC bodies get JSON-RPC errors, never a 500', async () => {
    const { gw } = await gatewayWithClient();
    for (const body of ['[1]', '"x"', '{}', '{"jsonrpc":"2.0","id":1,"method":"NoSuchMethod"}', '{"jsonrpc":"2.0","id":2,"method":"SendMessage","params":{"message":42}}']) {
      const { status, body: answer } = await getJson(`${gw.url}a2a`, { method: 'POST', headers: { 'content-type': 'application/json', 'a2a-version': '1.0' }, body });
      expect(status, body).toBe(200);
      expect(answer.error?.code, body).toEqual(expect.any(Number));
    }
    const unparseable = await getJson(`${gw.url}a2a`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{' });
    expect(unparseable.status).toBe(200);
    expect(unparseable.body.error.code).toBe(-32700);
  });
});

describe('A2A scopes', () => {
  it('a key with read only is refused SendMessage with 403 FORBIDDEN: no task is stored and nothing reaches the backend', async () => {
    const { SendMessageRequest } = await import('@a2a-js/sdk');
    const { gw, orders } = await gatewayWithClient('auth: { type: apiKey, keys: [{ id: reader, key: r1, scopes: [read] }] }\n');
    const params = SendMessageRequest.toJSON(commandRequest({ type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } }));
    const { status, body } = await getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': 'r1' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params }),
    });
    expect(status).toBe(403);
    expect(body.error).toMatchObject({ code: -32000, data: { code: 'FORBIDDEN', details: { scope: 'write' } } });
    expect([...orders.orders.values()].filter((o) => o.requestId !== undefined)).toEqual([]);
    const listed = await getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': 'r1' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ListTasks', params: {} }),
    });
    expect(listed.status).toBe(200);
    expect(listed.body.result.tasks ?? []).toEqual([]);
  });
});

describe('A2A tasks across a restart', () => {
  it('with the sqlite store, a restarted gateway still answers GetTask', async () => {
    const { orders } = await exampleBackends();
    const { join } = await import('node:path');
    const { tempDir } = await import('../../support/gateway.ts');
    const yaml = gatewayYaml(`${FAST_DISPATCH}\na2a: { settle: 300ms }\nbackends:\n${ordersBackend(orders.url)}`, `storage: { driver: sqlite, path: ${join(tempDir(), 'gw.db')} }`);
    const first = await startTestGateway(yaml);
    const task = await sendBlocking(await new ClientFactory().createFromUrl(first.url), { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    await first.close();
    const again = await startTestGateway(yaml);
    const client = await new ClientFactory().createFromUrl(again.url);
    const found = await client.getTask({ tenant: '', id: task.id });
    expect(found.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(found.artifacts.map((a) => a.name)).toEqual(['OrderPlacedV1']);
  });
});
