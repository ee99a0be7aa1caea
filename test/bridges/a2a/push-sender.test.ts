/**
 * Pending A2A push notifications are bounded per principal (`a2a.maxPendingPushPerPrincipal`) and
 * overall (`a2a.maxPendingPush`): a caller whose endpoints hang fills only its own share, and
 * another caller's notifications are still queued and delivered.
 */
import { TaskState, type StreamResponse, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { ServerCallContext, type PushNotificationStore } from '@a2a-js/sdk/server';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { eventually } from '../../support/gateway.ts';
import { GuardedPushSender } from '../../../src/bridges/a2a/push-sender.ts';
import type { DeliveryResponse } from '../../../src/egress/delivery-client.ts';

function caller(name: string): ServerCallContext {
  return new ServerCallContext({ user: { isAuthenticated: true, userName: name } });
}

function update(taskId: string): StreamResponse {
  return {
    payload: {
      $case: 'statusUpdate',
      value: { taskId, contextId: 'ctx', status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined },
    },
  } as StreamResponse;
}

/** One config per task, at `https://{taskId}.example/`. */
const store: PushNotificationStore = {
  save: async () => undefined,
  delete: async () => undefined,
  load: async (taskId) => [{ tenant: '', id: 'c', taskId, url: `https://${taskId}.example/`, token: '', authentication: undefined } as TaskPushNotificationConfig],
};

describe('GuardedPushSender pending bounds', () => {
  it('drops a principal\'s notifications beyond its share while another principal\'s are queued, and beyond the whole bound for everyone', async () => {
    const posted: string[] = [];
    const waiting: Array<() => void> = [];
    const post = (url: string): Promise<DeliveryResponse> => {
      posted.push(url);
      return new Promise((resolve) => waiting.push(() => resolve({ status: 200 } as DeliveryResponse)));
    };
    const dropped: string[] = [];
    const outcomes: string[] = [];
    const sender = new GuardedPushSender({
      store, post, retryScheduleMs: [10], maxPending: 3, maxPendingPerPrincipal: 2,
      onOutcome: (outcome) => outcomes.push(outcome), onDropped: (limit) => dropped.push(limit), logger: pino({ level: 'silent' }),
    });
    // Alice's endpoints hang: two of hers wait, the third is dropped by her share.
    for (const task of ['a1', 'a2', 'a3']) await sender.send(update(task), caller('alice'));
    expect(sender.pending('alice')).toBe(2);
    expect(dropped).toEqual(['principal']);
    // Bob's is still queued; then the whole queue (3) is full for everyone.
    await sender.send(update('b1'), caller('bob'));
    expect(sender.pending('bob')).toBe(1);
    await sender.send(update('b2'), caller('bob'));
    expect(dropped).toEqual(['principal', 'global']);
    expect(sender.pending()).toBe(3);
    // Deliveries end: the room comes back.
    await eventually(() => waiting.length === 3 || undefined);
    for (const release of waiting.splice(0)) release();
    await eventually(() => sender.pending() === 0 || undefined);
    expect(sender.pending('alice')).toBe(0);
    expect(outcomes.filter((o) => o === 'delivered')).toHaveLength(3);
    expect(posted.sort()).toEqual(['https://a1.example/', 'https://a2.example/', 'https://b1.example/']);
    await sender.send(update('a4'), caller('alice'));
    expect(sender.pending('alice')).toBe(1);
    sender.close();
  });
});
