/**
 * How an A2A task ends when no event decides it: COMPLETED `a2a.settle` after the last of its
 * events, FAILED at `a2a.timeout` when none came, CANCELED when the caller cancels (the command is
 * not recalled). A scripted proto backend emits a non-terminal event, or nothing.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import { afterEach, describe, expect, it } from 'vitest';
import { commandOutcome } from '../../../src/bridges/a2a/command-outcome.ts';
import { closeAll, eventually, gatewayYaml, startTestGateway } from '../../support/gateway.ts';
import { FAST_DISPATCH, protoBackend, scriptedBackend, sendJson } from '../../commands/support.ts';

afterEach(closeAll);

/** A proto backend accepting ShipParcel; `emit` says whether it then publishes a ParcelPickedV1 event. */
async function parcelBackend(emit: boolean, sizes: number[] = [0]) {
  const events: unknown[] = [];
  const backend = await scriptedBackend((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/commands' && req.method === 'GET') return sendJson(res, 200, { commands: [{ schema: 'ship-parcel', version: '1.0' }] });
    if (path === '/commands/ship-parcel/1.0') return sendJson(res, 200, { type: 'object' });
    if (path === '/events') return sendJson(res, 200, { events });
    if (path === '/commands' && req.method === 'POST') {
      const id = JSON.parse(req.body).id as string;
      if (emit) {
        sizes.forEach((size, i) => events.push({
          specversion: '1.0', id: `evt-${id}${i === 0 ? '' : `-${i}`}`, source: 'urn:parcels', type: 'ParcelPickedV1', datacontenttype: 'application/json', correlationid: id,
          time: new Date().toISOString(), data: { parcel: 'p-1', ...(size > 0 && { padding: 'x'.repeat(size) }) },
        }));
      }
      return sendJson(res, 201, { id });
    }
    sendJson(res, 404, {});
  });
  return backend;
}

async function gatewayWith(emit: boolean, a2a: string, sizes?: number[]): Promise<{ client: Client; received: () => number }> {
  const backend = await parcelBackend(emit, sizes);
  const gw = await startTestGateway(gatewayYaml(`${FAST_DISPATCH}\na2a: ${a2a}\nbackends:\n${protoBackend(backend.url, 'parcels')}`));
  const client = await new ClientFactory().createFromUrl(gw.url);
  return { client, received: () => backend.received.filter((r) => r.method === 'POST').length };
}

function shipParcel() {
  return {
    tenant: '', configuration: undefined, metadata: undefined,
    message: {
      messageId: randomUUID(), contextId: '', taskId: '', role: Role.ROLE_USER, metadata: undefined, extensions: [], referenceTaskIds: [],
      parts: [{ content: { $case: 'data' as const, value: { type: 'ShipParcel', data: { parcel: 'p-1' } } }, metadata: undefined, filename: '', mediaType: 'application/json' }],
    },
  };
}

describe('A2A and one event larger than sse.maxBufferedBytes (1 MiB)', () => {
  it('a 1.1 MB event followed by five small ones all reach the task as artifacts, streamed and in GetTask', async () => {
    const big = 1_100_000;
    const { client } = await gatewayWith(true, '{ settle: 500ms, timeout: 30s }', [big, 0, 0, 0, 0, 0]);
    const streamed: number[] = [];
    let taskId = '';
    for await (const item of client.sendMessageStream(shipParcel())) {
      const payload = item.payload;
      if (payload?.$case === 'artifactUpdate') {
        taskId = payload.value.taskId;
        const part = payload.value.artifact?.parts[0]?.content;
        streamed.push(part?.$case === 'data' ? JSON.stringify(part.value).length : 0);
      }
    }
    expect(streamed).toHaveLength(6);
    expect(streamed[0]).toBeGreaterThan(big);
    const task = await client.getTask({ tenant: '', id: taskId });
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts).toHaveLength(6);
  });
});

describe('A2A task endings without a deciding event', () => {
  it('COMPLETED once no further correlated event came within a2a.settle', async () => {
    const { client } = await gatewayWith(true, '{ settle: 300ms, timeout: 30s }');
    const task = (await client.sendMessage(shipParcel())) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(task.artifacts.map((a) => a.name)).toEqual(['ParcelPickedV1']);
  });

  it('FAILED at a2a.timeout when no event came at all', async () => {
    const { client, received } = await gatewayWith(false, '{ settle: 300ms, timeout: 1s }');
    const task = (await client.sendMessage(shipParcel())) as Task;
    expect(task.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(task.artifacts).toEqual([]);
    await eventually(() => received() === 1 || undefined);
  });

  it('CancelTask stops waiting: the task ends CANCELED, the command was still delivered', async () => {
    const { client, received } = await gatewayWith(false, '{ settle: 300ms, timeout: 60s }');
    const states: TaskState[] = [];
    for await (const item of client.sendMessageStream(shipParcel())) {
      const payload = item.payload;
      if (payload?.$case === 'statusUpdate' && payload.value.status) {
        states.push(payload.value.status.state);
        if (payload.value.status.state === TaskState.TASK_STATE_WORKING) {
          const canceled = await client.cancelTask({ tenant: '', id: payload.value.taskId, metadata: undefined });
          expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
        }
      }
    }
    expect(states).toEqual([TaskState.TASK_STATE_WORKING, TaskState.TASK_STATE_CANCELED]);
    await eventually(() => received() === 1 || undefined);
  });
});

describe('SubscribeToTask', () => {
  it('a second client following a running task sees its current state, then its end', async () => {
    const { client } = await gatewayWith(false, '{ settle: 300ms, timeout: 60s }');
    const stream = client.sendMessageStream(shipParcel());
    let taskId = '';
    for await (const item of stream) {
      if (item.payload?.$case === 'statusUpdate' && item.payload.value.status?.state === TaskState.TASK_STATE_WORKING) {
        taskId = item.payload.value.taskId;
        break;
      }
    }
    const follower = client.resubscribeTask({ tenant: '', id: taskId })[Symbol.asyncIterator]();
    const first = await follower.next();
    expect(first.value?.payload).toMatchObject({ $case: 'task', value: { id: taskId, status: { state: TaskState.TASK_STATE_WORKING } } });
    await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    const states: TaskState[] = [];
    for (let next = await follower.next(); !next.done; next = await follower.next()) {
      if (next.value.payload?.$case === 'statusUpdate' && next.value.payload.value.status) states.push(next.value.payload.value.status.state);
    }
    expect(states).toContain(TaskState.TASK_STATE_CANCELED);
  });
});

describe('a message for a running task', () => {
  it('is refused (-32004) while its command runs: the running task goes on undisturbed, and no second command is sent', async () => {
    const { client, received } = await gatewayWith(false, '{ settle: 300ms, timeout: 60s }');
    const stream = client.sendMessageStream(shipParcel())[Symbol.asyncIterator]();
    let running: { taskId: string; contextId: string } | undefined;
    while (running === undefined) {
      const { value } = await stream.next();
      if (value?.payload?.$case === 'statusUpdate' && value.payload.value.status?.state === TaskState.TASK_STATE_WORKING) running = value.payload.value;
    }
    const followUp = shipParcel();
    followUp.message.taskId = running.taskId;
    followUp.message.contextId = running.contextId;
    await expect(client.sendMessage(followUp)).rejects.toThrow(/TASK_STATE_WORKING: it takes a further message only in TASK_STATE_INPUT_REQUIRED/);
    await expect(client.sendMessageStream(followUp)[Symbol.asyncIterator]().next()).rejects.toThrow(/TASK_STATE_WORKING/);
    expect((await client.getTask({ tenant: '', id: running.taskId })).status?.state).toBe(TaskState.TASK_STATE_WORKING);
    await client.cancelTask({ tenant: '', id: running.taskId, metadata: undefined });
    const rest: TaskState[] = [];
    for (let next = await stream.next(); !next.done; next = await stream.next()) {
      if (next.value.payload?.$case === 'statusUpdate' && next.value.payload.value.status) rest.push(next.value.payload.value.status.state);
    }
    expect(rest).toEqual([TaskState.TASK_STATE_CANCELED]);
    expect(received()).toBe(1);
  });
});

describe('commandOutcome', () => {
  const rules = { produces: ['OrderPlacedV1'], successType: 'OrderAcceptedV2', failureType: 'OrderTroubleV1' };
  it('fails on the configured failure type, *Failed and *Rejected (with or without a version)', () => {
    for (const type of ['OrderTroubleV1', 'PlaceOrderFailedV1', 'PaymentRejected', 'X.Failed']) expect(commandOutcome(type, rules)).toBe('failed');
  });
  it('completes on the success type, a produces type, *Completed and *Succeeded', () => {
    for (const type of ['OrderAcceptedV2', 'OrderPlacedV1', 'ShipmentCompletedV3', 'RefundSucceeded']) expect(commandOutcome(type, rules)).toBe('completed');
  });
  it('keeps waiting on anything else', () => {
    for (const type of ['ParcelPickedV1', 'OrderFailedLater', 'CompletedOrderV1']) expect(commandOutcome(type, rules)).toBeUndefined();
  });
});
