/**
 * The SDK's `DefaultRequestHandler` with the gateway's rule for continuing a task: a message may
 * continue a task (its `taskId`) only while that task waits for input (`input-required`). A task
 * still running its command (submitted, working) refuses it with `UnsupportedOperationError`
 * (-32004) before the executor runs, so the running command's stream is never disturbed; terminal
 * tasks are refused by the SDK itself. Two messages racing for one waiting task in this process:
 * the first claims it until its execution has stored the task as WORKING, the second is refused. No event bus outlives its execution: a task waiting for
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
  /** The authenticated extended card of the caller (`GetExtendedAgentCard`); absent: the SDK's "not configured". */
  extendedCard?: (context: ServerCallContext) => Promise<AgentCard>;
}

/** `DefaultRequestHandler` refusing a message for a task that is not waiting for input. */
export class TaskRequestHandler extends DefaultRequestHandler {
  readonly #tasks: TaskStore;
  /** Tasks a message is being accepted for in this process, by scoped key. */
  readonly #claimed = new Set<string>();

  constructor(options: TaskRequestHandlerOptions) {
    // keepBusAliveStates []: the bus of an input-required task ends with its execution (see above).
    super(options.card, options.taskStore, options.executor, undefined, options.pushStore, options.pushSender, options.extendedCard, undefined, { keepBusAliveStates: [] });
    this.#tasks = options.taskStore;
  }

  override async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    const claim = await this.#claim(params, context);
    try {
      return await super.sendMessage(params, context);
    } finally {
      if (claim !== undefined) this.#claimed.delete(claim);
    }
  }

  override async *sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    let claim = await this.#claim(params, context);
    try {
      for await (const item of super.sendMessageStream(params, context)) {
        // The first event stored the task as it now is (WORKING for a continued task): release it.
        if (claim !== undefined) this.#claimed.delete(claim);
        claim = undefined;
        yield item;
      }
    } finally {
      if (claim !== undefined) this.#claimed.delete(claim);
    }
  }

  /**
   * Throws when the message names a task (of this caller) that runs a command now, or that another
   * message is being accepted for; otherwise claims a named task and returns the claim's key.
   */
  async #claim(params: SendMessageRequest, context: ServerCallContext): Promise<string | undefined> {
    const taskId = params.message?.taskId;
    if (!taskId) return undefined;
    const task = await this.#tasks.load(taskId, context);
    const state = task?.status?.state;
    // Unknown and terminal tasks: the SDK answers (TaskNotFound, UnsupportedOperation).
    if (task === undefined || state === undefined || TERMINAL.has(state)) return undefined;
    const key = `${context.tenant ?? ''}\n${context.user?.userName ?? ''}\n${taskId}`;
    if (!CONTINUABLE.has(state) || this.#claimed.has(key)) {
      const now = this.#claimed.has(key) ? 'taking another message' : TaskState[state];
      throw new UnsupportedOperationError(`Task ${taskId} is ${now}: it takes a further message only in TASK_STATE_INPUT_REQUIRED; follow it (SubscribeToTask, GetTask) or cancel it`);
    }
    this.#claimed.add(key);
    return key;
  }
}

const TERMINAL = new Set<TaskState>([TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED, TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED]);
