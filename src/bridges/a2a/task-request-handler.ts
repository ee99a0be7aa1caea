/**
 * The SDK's `DefaultRequestHandler` with the gateway's rule for continuing a task: a message may
 * continue a task (its `taskId`) only while that task waits for input (`input-required`). A task
 * still running its command (submitted, working) refuses it with `UnsupportedOperationError`
 * (-32004) before the executor runs, so the running command's stream is never disturbed; terminal
 * tasks are refused by the SDK itself. No event bus outlives its execution: a task waiting for
 * input keeps nothing in memory (any replica continues it from the task store, and an abandoned
 * one costs nothing but its stored entry, bounded by `a2a.maxTasks`).
 */
import { TaskState, type AgentCard, type Message, type SendMessageRequest, type StreamResponse, type Task } from '@a2a-js/sdk';
import { UnsupportedOperationError } from '@a2a-js/sdk/errors';
import {
  DefaultRequestHandler, type AgentExecutor, type PushNotificationSender, type PushNotificationStore, type ServerCallContext, type TaskStore,
} from '@a2a-js/sdk/server';

/** The states in which a task takes a further message. */
const CONTINUABLE = new Set<TaskState>([TaskState.TASK_STATE_INPUT_REQUIRED]);

/** What the handler is built from. */
export interface TaskRequestHandlerOptions {
  card: AgentCard;
  taskStore: TaskStore;
  executor: AgentExecutor;
  pushStore: PushNotificationStore;
  pushSender: PushNotificationSender;
}

/** `DefaultRequestHandler` refusing a message for a task that is not waiting for input. */
export class TaskRequestHandler extends DefaultRequestHandler {
  readonly #tasks: TaskStore;

  constructor(options: TaskRequestHandlerOptions) {
    // keepBusAliveStates []: the bus of an input-required task ends with its execution (see above).
    super(options.card, options.taskStore, options.executor, undefined, options.pushStore, options.pushSender, undefined, undefined, { keepBusAliveStates: [] });
    this.#tasks = options.taskStore;
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    await this.#refuseBusyTask(params, context);
    return super.sendMessage(params, context);
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    await this.#refuseBusyTask(params, context);
    yield* super.sendMessageStream(params, context);
  }

  /** Throws when the message names a task (of this caller) that runs a command now. */
  async #refuseBusyTask(params: SendMessageRequest, context: ServerCallContext): Promise<void> {
    const taskId = params.message?.taskId;
    if (!taskId) return;
    const task = await this.#tasks.load(taskId, context);
    const state = task?.status?.state;
    // Unknown and terminal tasks: the SDK answers (TaskNotFound, UnsupportedOperation).
    if (task === undefined || state === undefined || CONTINUABLE.has(state) || TERMINAL.has(state)) return;
    throw new UnsupportedOperationError(`Task ${taskId} is ${TaskState[state]}: it takes a further message only in TASK_STATE_INPUT_REQUIRED; follow it (SubscribeToTask, GetTask) or cancel it`);
  }
}

const TERMINAL = new Set<TaskState>([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
