/**
 * The A2A agent executor. Every message creates or continues a task:
 * - a user message whose data part is `{ type, data, source? }` becomes a command through the same
 *   pipeline as `POST /commands` (principal = the authenticated caller); every event correlated
 *   with it becomes an artifact of the task (name = event type, one data part = the event
 *   envelope) until an event decides the outcome (`command-outcome.ts`), no further event came
 *   within `a2a.settle`, `a2a.timeout` passed, or the caller cancelled;
 * - any other message (text, or a data part without a `type`) leaves the task `input-required`,
 *   its status message listing the skills and the data part expected; the caller continues the
 *   same task (its `taskId` and `contextId`) with a command.
 */
import { randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Part, type Task } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext, type ServerCallContext } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import { followAliases, type AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { openTailStream, type TailStream } from '../live-tail/tail-stream.ts';
import { ProtoError } from '../../errors.ts';
import type { CloudEvent } from '../../log/EventLog.ts';
import { commandOutcome, type OutcomeRules } from './command-outcome.ts';
import type { SkillSource } from './agent-card.ts';
import { NOBODY, type EventVisibility } from '../../edge/access-rules.ts';
import type { Principal } from '../../edge/credentials.ts';
import type { GatewayUser } from './gateway-user.ts';

/** A command type the executor can send, with what ends its task. */
export interface ExecutableCommand extends SkillSource, OutcomeRules {}

/** Counts of what the executor did. */
export interface A2aExecutorMetrics {
  /** A task reached its final state. */
  finished(state: 'completed' | 'failed' | 'rejected' | 'canceled'): void;
  /** An event was sent as an artifact. */
  artifact(): void;
}

/** What the executor needs. Per-caller catalogues: each answers for the caller it is given. */
export interface CommandExecutorOptions {
  /** The command type, or undefined when it is not in the catalogue or `caller` may not see it. */
  commandOf(type: string, caller: Principal): ExecutableCommand | undefined;
  /** Every command type `caller` may send (listed to a task waiting for a command). */
  commands(caller: Principal): readonly SkillSource[];
  /** Submits a command envelope for `caller` (the ingestion pipeline, with its grants); throws catalogue `ProtoError`s. */
  submit(caller: Principal, envelope: Record<string, unknown>): Promise<void>;
  /**
   * Stores a new task before its command runs (the task store's bounds: a full store throws a
   * catalogue `ProtoError`, and the task ends there, unpublished). Absent: the SDK stores it.
   */
  admit?(task: Task, context: ServerCallContext): Promise<void>;
  tail: LiveTail;
  aliases: AliasSource;
  /** The events `caller` sees (per-caller catalogues): a task reports only those, whatever else shares its correlation id. */
  visible(caller: Principal): EventVisibility;
  /** `a2a.settle`, in ms. */
  settleMs: number;
  /** `a2a.timeout`, in ms. */
  timeoutMs: number;
  metrics: A2aExecutorMetrics;
  logger: Logger;
}

/** The command a message carries: its data part, or undefined when it has none. */
interface CommandRequest {
  type?: unknown;
  data?: unknown;
  source?: unknown;
}

/** The abort reason of a shutdown (a cancel has none). */
const SHUTDOWN = 'shutdown';

/** Why waiting for events stopped. */
type Ending = { state: TaskState; text: string };

/** Sends commands and reports their events; `close()` ends every waiting task (idempotent). */
export class CommandExecutor implements AgentExecutor {
  readonly #options: CommandExecutorOptions;
  /** The running tasks' cancel switches, by task id. */
  readonly #running = new Map<string, AbortController>();

  constructor(options: CommandExecutorOptions) {
    this.#options = options;
  }

  execute = async (request: RequestContext, bus: ExecutionEventBus): Promise<void> => {
    const message = request.userMessage;
    const command = commandPart(message);
    const task = new TaskReporter(request, bus, this.#options.metrics);
    // The SDK hands over the user the bridge made; without one, the caller holds nothing.
    const caller = (request.context.user as GatewayUser | undefined)?.principal ?? NOBODY;
    const initial = task.initial(message);
    if (request.task === undefined && this.#options.admit) {
      // A new task takes its room in the store before anything runs; refused (a full store), the
      // call ends without a task or a command, and the bridge answers the refusal.
      try {
        await this.#options.admit(initial, request.context);
      } catch (err) {
        if (!(err instanceof ProtoError)) throw err;
        bus.finished();
        return;
      }
    }
    task.start(initial);
    if (!namesCommand(command)) {
      task.inputRequired(this.#guidance(caller, command === undefined ? 'This message has no data part.' : 'The data part has no "type".'));
      bus.finished();
      return;
    }
    const cancel = new AbortController();
    this.#running.set(request.taskId, cancel);
    try {
      const ending = await this.#run(command, caller, task, cancel.signal);
      task.end(ending);
      this.#options.logger.debug({ taskId: request.taskId, state: TaskState[ending.state], principal: caller.id }, 'a2a task ended');
    } finally {
      this.#running.delete(request.taskId);
      bus.finished();
    }
  };

  cancelTask = async (taskId: string): Promise<void> => {
    // Stops waiting; the command itself is not recalled (issue #13).
    this.#running.get(taskId)?.abort();
  };

  /** Ends every task still waiting (shutdown begins: their streams end before the HTTP drain). Idempotent. */
  drain(): void {
    for (const cancel of this.#running.values()) cancel.abort(SHUTDOWN);
  }

  /** Same as `drain()`. */
  close(): void {
    this.drain();
  }

  /** Checks, submits and follows one command; resolves with how the task ends. */
  async #run(command: CommandRequest & { type: string }, caller: Principal, task: TaskReporter, signal: AbortSignal): Promise<Ending> {
    const refusal = this.#refusal(command, caller);
    if (refusal) return refused(refusal);
    const entry = this.#options.commandOf(command.type, caller) as ExecutableCommand;
    const id = randomUUID();
    // Opened before the command is submitted, so no correlated event can slip past.
    const { filter, aliasesFor } = await followAliases({ correlationId: id }, this.#options.aliases);
    const stream = openTailStream(this.#options.tail, { transport: 'a2a', filter, aliasesFor, visible: this.#options.visible(caller), closeOnTerminal: false });
    try {
      await this.#options.submit(caller, envelopeOf(id, entry, command));
    } catch (err) {
      stream.close();
      return refused(err);
    }
    task.working(id);
    try {
      return await this.#follow(stream, entry, task, signal);
    } finally {
      stream.close();
    }
  }

  /** A refusal that needs no pipeline: no `write` scope, or a type unknown to (or hidden from) the caller. */
  #refusal(command: CommandRequest & { type: string }, caller: Principal): ProtoError | undefined {
    if (!caller.scopes.has('write')) return new ProtoError('FORBIDDEN', 'sending a command needs the write scope');
    if (this.#options.commandOf(command.type, caller) === undefined) {
      return new ProtoError('UNKNOWN_COMMAND_TYPE', `no command type ${command.type}; the agent card lists the skills`);
    }
    return undefined;
  }

  /** Publishes every correlated event as an artifact until one decides, the settle or timeout passes, or a cancel. */
  async #follow(stream: TailStream, entry: ExecutableCommand, task: TaskReporter, signal: AbortSignal): Promise<Ending> {
    const events = stream[Symbol.asyncIterator]();
    const deadline = Date.now() + this.#options.timeoutMs;
    let settleAt: number | undefined;
    let seen = 0;
    for (;;) {
      const waitMs = Math.min(deadline, settleAt ?? deadline) - Date.now();
      const next = await nextWithin(events, waitMs, signal);
      if (next === 'aborted' && signal.reason === SHUTDOWN) return { state: TaskState.TASK_STATE_FAILED, text: 'the gateway is shutting down; the command was accepted, its events stay in the log' };
      if (next === 'aborted') return { state: TaskState.TASK_STATE_CANCELED, text: 'stopped waiting for events (the command is not recalled)' };
      if (next === 'timeout') {
        if (seen > 0) return { state: TaskState.TASK_STATE_COMPLETED, text: `no further event came (${seen} event(s) received)` };
        return { state: TaskState.TASK_STATE_FAILED, text: `no event came within ${this.#options.timeoutMs} ms` };
      }
      if (next.done) return { state: TaskState.TASK_STATE_FAILED, text: `the event stream ended (${await stream.ended})` };
      const event = next.value;
      seen += 1;
      task.artifact(event);
      const outcome = commandOutcome(event.type, entry);
      if (outcome === 'failed') return { state: TaskState.TASK_STATE_FAILED, text: `${event.type}: the command failed` };
      if (outcome === 'completed') return { state: TaskState.TASK_STATE_COMPLETED, text: `${event.type}: the command completed` };
      settleAt = Date.now() + this.#options.settleMs;
    }
  }

  /** The status message of an `input-required` task: why, the skills the caller may use, and the data part expected. */
  #guidance(caller: Principal, why: string): Part[] {
    const commands = this.#options.commands(caller);
    const lines = commands.map((c) => `- ${c.type} (${c.schema} ${c.version}, ${c.backend})${c.description ? `: ${c.description}` : ''}`);
    const text = [
      why,
      'Continue this task (same taskId and contextId) with a message holding one data part {"type": "<CommandType>", "data": {...}, "source"?: "..."}.',
      'The task then reports every event the command produces as an artifact. Command types:',
      ...lines,
    ].join('\n');
    const expected = {
      expectedDataPart: { type: '<CommandType>', data: {}, source: '<optional URI-reference>' },
      commandTypes: commands.map((c) => ({ type: c.type, schema: c.schema, version: c.version, backend: c.backend, description: c.description })),
    };
    return [textPart(text), dataPart(expected)];
  }
}

/** The next event, or `timeout` after `waitMs`, or `aborted` when `signal` fires. */
async function nextWithin(events: AsyncIterator<CloudEvent>, waitMs: number, signal: AbortSignal): Promise<IteratorResult<CloudEvent> | 'timeout' | 'aborted'> {
  if (signal.aborted) return 'aborted';
  if (waitMs <= 0) return 'timeout';
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const timeout = new Promise<'timeout'>((resolve) => { timer = setTimeout(() => resolve('timeout'), waitMs); });
  const aborted = new Promise<'aborted'>((resolve) => {
    onAbort = () => resolve('aborted');
    signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([events.next(), timeout, aborted]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal.removeEventListener('abort', onAbort);
  }
}

/** The command envelope of a data part (the same shape `POST /commands` accepts). */
function envelopeOf(id: string, entry: ExecutableCommand, command: CommandRequest): Record<string, unknown> {
  return {
    specversion: '1.0',
    id,
    source: typeof command.source === 'string' && command.source.length > 0 ? command.source : 'urn:proto-gateway:a2a',
    type: entry.type,
    datacontenttype: 'application/json',
    dataschema: `${entry.schema}/${entry.version}`,
    time: new Date().toISOString(),
    data: command.data,
  };
}

/** The ending of a refused submission: its code and message (4xx: rejected; otherwise failed). */
function refused(err: unknown): Ending {
  if (!(err instanceof ProtoError)) throw err;
  const state = err.status < 500 ? TaskState.TASK_STATE_REJECTED : TaskState.TASK_STATE_FAILED;
  return { state, text: `${err.code}: ${err.message}` };
}

/** Whether a data part names a command type. */
function namesCommand(command: CommandRequest | undefined): command is CommandRequest & { type: string } {
  return typeof command?.type === 'string' && command.type.length > 0;
}

/** The first data part of `message`, or undefined. */
function commandPart(message: Message): CommandRequest | undefined {
  for (const part of message.parts) {
    if (part.content?.$case !== 'data') continue;
    const value: unknown = part.content.value;
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as CommandRequest) : {};
  }
  return undefined;
}

/** A data part holding `value`. */
export function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

function agentMessage(request: { taskId: string; contextId: string }, parts: Part[]): Message {
  return {
    messageId: randomUUID(), contextId: request.contextId, taskId: request.taskId, role: Role.ROLE_AGENT,
    parts, metadata: undefined, extensions: [], referenceTaskIds: [],
  };
}

/** Publishes one task's lifecycle on its bus. */
class TaskReporter {
  readonly #request: RequestContext;
  readonly #bus: ExecutionEventBus;
  readonly #metrics: A2aExecutorMetrics;
  #commandId: string | undefined;

  constructor(request: RequestContext, bus: ExecutionEventBus, metrics: A2aExecutorMetrics) {
    this.#request = request;
    this.#bus = bus;
    this.#metrics = metrics;
  }

  /**
   * The task as the message leaves it: a new one SUBMITTED with the message as its history, or a
   * continued one WORKING on the message (empty history and artifacts: the stored ones are kept).
   */
  initial(message: Message): Task {
    const { taskId, contextId, task } = this.#request;
    const status = this.#status(task === undefined ? TaskState.TASK_STATE_SUBMITTED : TaskState.TASK_STATE_WORKING);
    return { id: taskId, contextId, status, artifacts: [], history: task === undefined ? [message] : [], metadata: undefined };
  }

  /** Publishes the task as `initial` built it: stored at once, so a further message finds it no longer waiting for input. */
  start(initial: Task): void {
    this.#bus.publish(AgentEvent.task(initial));
  }

  /** The task waits for a message with a command; `parts` say what to send. */
  inputRequired(parts: Part[]): void {
    this.#update(TaskState.TASK_STATE_INPUT_REQUIRED, parts);
  }

  /** The command entered the outbox: the task works, and names the command id (the correlation id). */
  working(commandId: string): void {
    this.#commandId = commandId;
    this.#update(TaskState.TASK_STATE_WORKING);
  }

  artifact(event: CloudEvent): void {
    const { taskId, contextId } = this.#request;
    this.#bus.publish(AgentEvent.artifactUpdate({
      taskId, contextId, append: false, lastChunk: true, metadata: undefined,
      artifact: { artifactId: event.id, name: event.type, description: '', parts: [dataPart(event)], metadata: undefined, extensions: [] },
    }));
    this.#metrics.artifact();
  }

  end(ending: Ending): void {
    this.#update(ending.state, [textPart(ending.text)]);
    this.#metrics.finished(finalName(ending.state));
  }

  #update(state: TaskState, parts?: Part[]): void {
    const { taskId, contextId } = this.#request;
    const metadata = this.#commandId === undefined ? undefined : { commandId: this.#commandId };
    this.#bus.publish(AgentEvent.statusUpdate({ taskId, contextId, status: this.#status(state, parts), metadata }));
  }

  #status(state: TaskState, parts?: Part[]) {
    const message = parts === undefined ? undefined : agentMessage(this.#request, parts);
    return { state, message, timestamp: new Date().toISOString() };
  }
}

function finalName(state: TaskState): 'completed' | 'failed' | 'rejected' | 'canceled' {
  if (state === TaskState.TASK_STATE_COMPLETED) return 'completed';
  if (state === TaskState.TASK_STATE_REJECTED) return 'rejected';
  if (state === TaskState.TASK_STATE_CANCELED) return 'canceled';
  return 'failed';
}
