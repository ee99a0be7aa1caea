/**
 * The rule of `TaskRequestHandler` under interleaving: messages racing to continue one task that
 * waits for input all read it as waiting (their loads interleave); the first claims it, the others
 * are refused, and only one execution runs.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Task } from '@a2a-js/sdk';
import { AgentEvent, InMemoryPushNotificationStore, ServerCallContext, type AgentExecutor, type TaskStore } from '@a2a-js/sdk/server';
import { describe, expect, it } from 'vitest';
import { buildAgentCard } from '../../../src/bridges/a2a/agent-card.ts';
import { MemoryTaskStore } from '../../../src/bridges/a2a/memory-task-store.ts';
import { TaskRequestHandler } from '../../../src/bridges/a2a/task-request-handler.ts';

const caller = new ServerCallContext({ user: { isAuthenticated: true, userName: 'alice' } });

/** A task store whose first `n` loads all wait until `n` were asked for: the loads of racing messages interleave. */
function interleaving(store: TaskStore, n: number): TaskStore {
  let waiting: Array<() => void> = [];
  let gated = 0;
  return {
    save: (task, context) => store.save(task, context),
    list: (params, context) => store.list(params, context),
    load: async (taskId, context) => {
      if (gated < n) {
        gated += 1;
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          if (waiting.length === n) for (const release of waiting.splice(0)) release();
        });
      }
      return store.load(taskId, context);
    },
  } as TaskStore;
}

describe('TaskRequestHandler', () => {
  it('of messages racing to continue one waiting task, one runs and the others are refused', async () => {
    const memory = new MemoryTaskStore({ maxTasks: 10, ttlMs: 60_000 });
    const waitingTask: Task = {
      id: 't-1', contextId: 'c-1', artifacts: [], history: [], metadata: undefined,
      status: { state: TaskState.TASK_STATE_INPUT_REQUIRED, message: undefined, timestamp: new Date().toISOString() },
    };
    await memory.save(waitingTask, caller);
    const executed: string[] = [];
    const executor: AgentExecutor = {
      execute: async (request, bus) => {
        executed.push(request.userMessage.messageId);
        bus.publish(AgentEvent.task({ ...waitingTask, status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() } }));
        bus.publish(AgentEvent.statusUpdate({ taskId: 't-1', contextId: 'c-1', metadata: undefined, status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() } }));
        bus.finished();
      },
      cancelTask: async () => {},
    };
    const card = buildAgentCard({ a2a: { name: 'gw', description: 'gw' } as never, auth: { type: 'none' } as never, publicUrl: 'http://127.0.0.1/', commands: [] });
    const handler = new TaskRequestHandler({ card, taskStore: interleaving(memory, 3), executor, pushStore: new InMemoryPushNotificationStore(), pushSender: { send: async () => {} } });
    const message = () => ({
      tenant: '', configuration: undefined, metadata: undefined,
      message: { messageId: randomUUID(), taskId: 't-1', contextId: 'c-1', role: Role.ROLE_USER, parts: [], metadata: undefined, extensions: [], referenceTaskIds: [] },
    });
    const results = await Promise.allSettled([handler.sendMessage(message(), caller), handler.sendMessage(message(), caller), handler.sendMessage(message(), caller)]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected', 'rejected']);
    for (const r of results) if (r.status === 'rejected') expect(String(r.reason)).toMatch(/taking another message/);
    expect(executed).toHaveLength(1);
  });
});
