/**
 * Per-caller catalogues on A2A: the skills a caller is shown (extended card, the public card with
 * `a2a.publicSkills`, the guidance of a task waiting for a command) and the commands it may send
 * follow the same `access` rules as HTTP, and the caller's grants reach the command pipeline.
 * Callers are the real A2A SDK client with tokens of a real OpenID provider (realm roles, a nested
 * claim); the command goes to the example orders service.
 */
import { randomUUID } from 'node:crypto';
import { AgentCard, Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { ClientFactory, ClientFactoryOptions, createAuthenticatingFetchWithRetry, DefaultAgentCardResolver, JsonRpcTransportFactory, type Client } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { exampleBackends, FAST_DISPATCH, ordersBackend } from '../../commands/support.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway, track } from '../../support/gateway.ts';
import { startTestIdp, type TestClient } from '../../support/oidc-provider.ts';

afterEach(closeAll);

const clerk: TestClient = { id: 'clerk', secret: 'clerk-secret', scope: 'openid', roles: ['gateway-user'] };
const manager: TestClient = { id: 'manager', secret: 'manager-secret', scope: 'openid', roles: ['gateway-user', 'orders-admin'] };

/** The orders service's PlaceOrder open only to `orders-admin`; a notes backend whose AddNote is everyone's. */
async function setup() {
  const provider = track(await startTestIdp([clerk, manager]));
  const { orders } = await exampleBackends();
  const restricted = ordersBackend(orders.url).replace('        description: Place an order\n', '        description: Place an order\n        access: [orders-admin]\n');
  const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}
a2a: { settle: 300ms, timeout: 20s, publicSkills: true }
auth:
  type: oauth2
  oauth2:
    issuer: ${provider.issuer}
    audience: proto-gateway
    scopeClaim: realm_access.roles
    scopeMap: { gateway-user: [read, write] }
backends:
${restricted}  - id: notes
    kind: legacy
    url: http://127.0.0.1:9
    commands:
      - { type: AddNote, jsonSchema: { type: object }, request: { path: /notes } }
`));
  const clientOf = async (who: TestClient): Promise<Client> => {
    const token = await provider.token(who, 'openid');
    const fetchImpl = createAuthenticatingFetchWithRetry(fetch, {
      headers: async () => ({ authorization: `Bearer ${token}` }),
      shouldRetryWithHeaders: async () => undefined,
    });
    const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ fetchImpl })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
    }));
    return factory.createFromUrl(gw.url);
  };
  return { gw, orders, asClerk: await clientOf(clerk), asManager: await clientOf(manager) };
}

function message(parts: Part[]): Message {
  return { messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, parts, metadata: undefined, extensions: [], referenceTaskIds: [] };
}

function send(client: Client, content: Part['content']): Promise<Task> {
  const part: Part = { content, metadata: undefined, filename: '', mediaType: content?.$case === 'data' ? 'application/json' : 'text/plain' };
  return client.sendMessage({ tenant: '', message: message([part]), configuration: undefined, metadata: undefined }) as Promise<Task>;
}

function statusText(task: Task): string {
  const first = task.status?.message?.parts[0]?.content;
  return first?.$case === 'text' ? first.value : '';
}

describe('A2A per-caller catalogues (access)', () => {
  it("the extended card shows each caller the skills it may use; the public card only what is everyone's", async () => {
    const { gw, asClerk, asManager } = await setup();
    const skills = async (client: Client) => (await client.getAgentCard()).skills.map((s) => s.id).sort();
    expect(await skills(asClerk)).toEqual(['add-note']);
    expect(await skills(asManager)).toEqual(['add-note', 'place-order']);
    // a2a.publicSkills: the public card lists the catalogue, but never what has an access list.
    const publicCard = AgentCard.fromJSON((await getJson(`${gw.url}.well-known/agent-card.json`)).body);
    expect(publicCard.skills.map((s) => s.id)).toEqual(['add-note']);
  });

  it('a caller whose grants open a command sends it through A2A: the task completes with its events', async () => {
    const { orders, asManager } = await setup();
    const task = await send(asManager, { $case: 'data', value: { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } } });
    expect(statusText(task)).toContain('OrderPlacedV1');
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts.map((a) => a.name)).toEqual(['OrderPlacedV1']);
    expect([...orders.orders.values()].filter((o) => o.requestId !== undefined)).toHaveLength(1);
  });

  it('a caller without them is refused exactly as for a command that does not exist, and nothing is sent', async () => {
    const { orders, asClerk } = await setup();
    const hidden = await send(asClerk, { $case: 'data', value: { type: 'PlaceOrder', data: { sku: 'widget', qty: 1 } } });
    const absent = await send(asClerk, { $case: 'data', value: { type: 'NoSuchCommand', data: {} } });
    expect(hidden.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(absent.status?.state).toBe(TaskState.TASK_STATE_REJECTED);
    expect(statusText(hidden)).toMatch(/^UNKNOWN_COMMAND_TYPE: /);
    expect(statusText(hidden).replace('PlaceOrder', 'X')).toBe(statusText(absent).replace('NoSuchCommand', 'X'));
    expect([...orders.orders.values()].filter((o) => o.requestId !== undefined)).toEqual([]);
  });

  it('a task waiting for a command lists only the command types its caller may send', async () => {
    const { asClerk, asManager } = await setup();
    const listed = (task: Task): string[] => {
      const data = task.status?.message?.parts[1]?.content;
      return data?.$case === 'data' ? (data.value as { commandTypes: Array<{ type: string }> }).commandTypes.map((c) => c.type).sort() : [];
    };
    const forClerk = await send(asClerk, { $case: 'text', value: 'what can you do?' });
    expect(forClerk.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(listed(forClerk)).toEqual(['AddNote']);
    expect(statusText(forClerk)).not.toContain('PlaceOrder');
    expect(listed(await send(asManager, { $case: 'text', value: 'what can you do?' }))).toEqual(['AddNote', 'PlaceOrder']);
  });
});
