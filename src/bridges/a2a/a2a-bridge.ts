/**
 * The A2A bridge (A2A protocol 1.0 via `@a2a-js/sdk`): the agent card at
 * `GET /.well-known/agent-card.json` (public) and the JSON-RPC endpoint at `POST /a2a` on the
 * gateway's own HTTP server, streaming answers SSE-framed. The SDK's `DefaultRequestHandler` runs
 * the A2A methods (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask,
 * SubscribeToTask) over the command executor and a bounded, expiring task store.
 *
 * Admission: the endpoint needs `read`; each JSON-RPC method is then checked against the operations
 * table of `edge/` (SendMessage, SendStreamingMessage and push-config creation need `write`). Every
 * answer of `/a2a` is a JSON-RPC response object: the gateway's admission refusals (401, 403, 413,
 * 429, 503) keep their HTTP status with a JSON-RPC error body (`jsonRpcRefusal`: -32000, the
 * catalogue error as `data`), every other error is HTTP 200. A streaming answer holds a slot of the
 * shared stream pool while it is open. A new task never evicts another caller's (503
 * `TASKS_EXHAUSTED` when the task store is full of theirs).
 */
import { A2A_PROTOCOL_VERSION, A2A_VERSION_HEADER, AGENT_CARD_PATH } from '@a2a-js/sdk';
import { JsonRpcTransportHandler, ServerCallContext, validateVersion } from '@a2a-js/sdk/server';
import type { Logger } from 'pino';
import type { CommandCatalogue, CommandEntry } from '../../catalogue/command-catalogue.ts';
import type { CommandIngestion } from '../../commands/ingestion.ts';
import type { BackendConfig, GatewayConfig } from '../../config/types.ts';
import { NOBODY, type AccessRules } from '../../edge/access-rules.ts';
import type { Admission } from '../../edge/admission.ts';
import type { Principal } from '../../edge/credentials.ts';
import { a2aOperation } from '../../edge/operations.ts';
import type { Reply, RequestContext, Route } from '../../http/route.ts';
import type { AliasSource } from '../live-tail/aliases.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { A2A_ENDPOINT_PATH, agentCardJson, buildAgentCard } from './agent-card.ts';
import { CommandExecutor, type ExecutableCommand } from './command-executor.ts';
import { GuardedPushSender } from './push-sender.ts';
import { TaskStorePushConfigs } from './push-config-store.ts';
import type { GatewayTaskStore } from './open-task-store.ts';
import type { DeliveryResponse } from '../../egress/delivery-client.ts';
import type { A2aMetrics } from '../../metrics/a2a.ts';
import { GatewayUser } from './gateway-user.ts';
import { JSON_RPC, jsonRpcError, jsonRpcRefusal, readJsonRpcRequest, type JsonRpcId, type JsonRpcRequest } from './jsonrpc-request.ts';
import { isProtoError, ProtoError } from '../../errors.ts';
import { TaskRequestHandler } from './task-request-handler.ts';
import { inSpan, startRpcServerSpan } from '../../telemetry/tracing.ts';

/** What the A2A bridge is built from. */
export interface A2aBridgeOptions {
  config: Pick<GatewayConfig, 'a2a' | 'auth' | 'backends' | 'webhooks'>;
  publicUrl: string;
  catalogue: CommandCatalogue;
  ingestion: CommandIngestion;
  aliases: AliasSource;
  tail: LiveTail;
  taskStore: GatewayTaskStore;
  /**
   * The task and push bounds, read at each use so a reload's `reconfigure` reaches every check that
   * names them (the same object the task store reads); default: `config.a2a`'s.
   */
  limits?: A2aLimits;
  metrics: A2aMetrics;
  admission: Admission;
  /** Per-caller catalogues: the skills a caller is shown and may use. */
  access: AccessRules;
  /** With `auth.type: oauth2`: the token endpoint the card's security schemes name, once known. */
  tokenUrl?: () => string | undefined;
  /** Posts a push notification through the webhook bridge's SSRF-guarded client. */
  post(url: string, headers: Record<string, string>, body: string, signal?: AbortSignal): Promise<DeliveryResponse>;
  /** The configured backends of the current configuration generation (a reload changes them); default `config.backends`. */
  backendConfigs?: () => readonly BackendConfig[];
  logger: Logger;
}

/** The A2A bounds a reload may change: one object, read at each use by the store, the quota check and the push sender. */
export interface A2aLimits {
  maxTasks: number;
  ttlMs: number;
  maxTasksPerPrincipal: number;
  maxPushConfigsPerTask: number;
  maxPushConfigsPerPrincipal: number;
  maxPendingPush: number;
  maxPendingPushPerPrincipal: number;
}

/** `a2a`'s bounds as one `A2aLimits` (a fresh object: `createA2a` keeps it and a reload updates it in place). */
export function a2aLimits(a2a: GatewayConfig['a2a']): A2aLimits {
  return {
    maxTasks: a2a.maxTasks,
    ttlMs: a2a.taskTtlMs,
    maxTasksPerPrincipal: a2a.maxTasksPerPrincipal,
    maxPushConfigsPerTask: a2a.maxPushConfigsPerTask,
    maxPushConfigsPerPrincipal: a2a.maxPushConfigsPerPrincipal,
    maxPendingPush: a2a.maxPendingPush,
    maxPendingPushPerPrincipal: a2a.maxPendingPushPerPrincipal,
  };
}

/** The bridge, built: its routes and its executor (a component: `drain()` ends waiting tasks). */
export interface A2aBridge {
  routes: Route[];
  executor: CommandExecutor;
  /** Delivers push notifications (a component: `close()` stops retries). */
  pushSender: GuardedPushSender;
  /** The agent card's public URL (the manifest's `a2a.agent_card_url`). */
  agentCardUrl: string;
}

/** Server-sent events framing of JSON-RPC stream answers (A2A 1.0, JSON-RPC binding). */
const SSE_HEADERS = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' };

/** Builds the A2A bridge. */
export function a2aBridge(options: A2aBridgeOptions): A2aBridge {
  const { config, publicUrl, catalogue, access } = options;
  // Per-caller catalogues: a caller is shown, and may send, only the commands it may see.
  const commands = (caller: Principal): CommandEntry[] => catalogue.entries().filter((entry) => access.command(caller, entry));
  const cardFor = (caller: Principal, withSkills = true) => buildAgentCard({ a2a: config.a2a, auth: config.auth, publicUrl, commands: commands(caller), tokenUrl: options.tokenUrl?.() }, withSkills);
  // The public card carries the catalogue only with a2a.publicSkills, and then only what has no
  // `access` list (it is everyone's); the extended card carries what its caller may use.
  const card = () => cardFor(NOBODY, config.a2a.publicSkills);
  const extendedCard = async (context: ServerCallContext) => cardFor((context.user as GatewayUser | undefined)?.principal ?? NOBODY);
  // Refusals met inside the SDK's run of a call (a full task store), answered by the bridge.
  const refusals = new WeakMap<ServerCallContext, ProtoError>();
  const executor = new CommandExecutor({
    commandOf: (type, caller) => {
      const entry = catalogue.byType(type);
      return entry && access.command(caller, entry) ? executable(entry, options.backendConfigs?.() ?? config.backends) : undefined;
    },
    commands,
    visible: (caller) => access.eventsSeenBy(caller),
    // The caller's grants go with the envelope: the pipeline applies `access` as for any front.
    submit: async (caller, envelope) => {
      await options.ingestion.submit({ principal: caller.id, caller, readBody: async () => envelope });
    },
    // A new task takes its room first: a store full of other callers' tasks is 503 TASKS_EXHAUSTED.
    admit: async (task, context) => {
      try {
        await options.taskStore.save(task, context);
      } catch (err) {
        if (isProtoError(err)) {
          if (err.code === 'TASKS_EXHAUSTED') options.admission.refused('a2a.tasks', 'global');
          refusals.set(context, err);
          // The SDK stored the message's push config first: without its task it would count toward
          // the caller's a2a.maxPushConfigsPerPrincipal for a whole taskTtl.
          await forgetPushConfigs(options.taskStore, task.id, context).catch(() => {});
        }
        throw err;
      }
    },
    tail: options.tail,
    aliases: options.aliases,
    settleMs: config.a2a.settleMs,
    timeoutMs: config.a2a.timeoutMs,
    metrics: options.metrics,
    logger: options.logger,
  });
  const limits = options.limits ?? a2aLimits(config.a2a);
  const pushStore = new TaskStorePushConfigs({
    tasks: options.taskStore,
    get maxPerTask() { return limits.maxPushConfigsPerTask; },
    get maxPerPrincipal() { return limits.maxPushConfigsPerPrincipal; },
    refused: (limit) => options.admission.refused('a2a.pushConfigs', limit),
  });
  const pushSender = new GuardedPushSender({
    store: pushStore,
    post: options.post,
    retryScheduleMs: config.webhooks.retry.scheduleMs,
    get maxPending() { return limits.maxPendingPush; },
    get maxPendingPerPrincipal() { return limits.maxPendingPushPerPrincipal; },
    onOutcome: (outcome) => options.metrics.push(outcome),
    onDropped: (limit) => options.admission.refused('a2a.pendingPush', limit),
    logger: options.logger,
  });
  const handler = new TaskRequestHandler({ card: card(), taskStore: options.taskStore, executor, pushStore, pushSender, extendedCard });
  // The card's skills follow the catalogue: the handler asks for the card on every call.
  handler.getAgentCard = async () => card();
  const transport = new JsonRpcTransportHandler(handler);
  const refusalOf = (context: ServerCallContext) => pushStore.refusalOf(context) ?? refusals.get(context);
  const endpoint: Endpoint = { transport, handler, admission: options.admission, tasks: options.taskStore, refusalOf, limits };
  const routes: Route[] = [
    { method: 'GET', path: `/${AGENT_CARD_PATH}`, public: true, handle: () => ({ status: 200, body: agentCardJson(card()) }) },
    {
      method: 'POST',
      path: `/${A2A_ENDPOINT_PATH}`,
      operation: 'a2a.endpoint',
      refusal: (error) => refusalReply(null, error),
      handle: (ctx) => answer(ctx, endpoint),
    },
  ];
  return { routes, executor, pushSender, agentCardUrl: `${publicUrl}${AGENT_CARD_PATH}` };
}

/**
 * Answers one JSON-RPC request: a JSON body, or an SSE stream for the streaming methods. The
 * envelope is checked first (`jsonrpc-request.ts`); JSON-RPC errors are HTTP 200, the gateway's
 * refusals (scope, quotas, the stream pool) keep their status with a JSON-RPC error body.
 */
async function answer(ctx: RequestContext, endpoint: Endpoint): Promise<Reply | undefined> {
  const checked = await readJsonRpcRequest(() => ctx.json());
  if ('refusal' in checked) return { status: 200, body: checked.refusal };
  const { request } = checked;
  try {
    return await answerChecked(ctx, request, endpoint);
  } catch (err) {
    // A refusal once the id is known carries it (the route's `refusal` answers those before it).
    if (isProtoError(err)) return refusalReply(request.id, err);
    throw err;
  }
}

/** A gateway refusal on `/a2a`: its HTTP status and headers, a JSON-RPC error body. */
function refusalReply(id: JsonRpcId, error: ProtoError): Reply {
  return { status: error.status, headers: error.headers, body: jsonRpcRefusal(id, error) };
}

async function answerChecked(ctx: RequestContext, request: JsonRpcRequest, endpoint: Endpoint): Promise<Reply | undefined> {
  const { admission } = endpoint;
  const operation = a2aOperation(request.method);
  // An unknown method has no row: the SDK answers it "method not found".
  if (operation) admission.authorize(ctx.principal, operation);
  const oversized = oversizedPushConfig(request);
  if (oversized !== undefined) return { status: 200, body: jsonRpcError(request.id, JSON_RPC.INVALID_PARAMS, oversized) };
  // The server span of the JSON-RPC call (a command it submits is accepted under it); an unknown method is not named.
  const span = startRpcServerSpan('jsonrpc', 'a2a', operation ? String(request.method) : 'unknown');
  return inSpan(span, () => answerCall(ctx, request, endpoint));
}

/** Answers an admitted JSON-RPC call (see `answerChecked`). */
async function answerCall(ctx: RequestContext, request: JsonRpcRequest, endpoint: Endpoint): Promise<Reply | undefined> {
  const { transport, handler, admission, refusalOf } = endpoint;
  const version = headerOf(ctx, A2A_VERSION_HEADER) ?? A2A_PROTOCOL_VERSION;
  const context = new ServerCallContext({ user: new GatewayUser(ctx.principal), requestedVersion: version });
  try {
    validateVersion(context.requestedVersion, await handler.getAgentCard(), 'JSONRPC');
  } catch (err) {
    return { status: 200, body: { jsonrpc: '2.0', id: request.id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) } };
  }
  await checkTaskQuota(request, context, endpoint);
  const result = await transport.handle(request as unknown as Record<string, unknown>, context);
  // A bound refused inside the SDK (a push-config bound, which it reports as an internal error; a
  // full task store, which ends the call without a task): the gateway's refusal.
  const refused = refusalOf(context);
  if (refused) throw refused;
  if (!(Symbol.asyncIterator in result)) return { status: 200, body: result };
  let slot;
  try {
    // A reload that revokes the caller's credentials, or its token's expiry, ends the stream: the connection is cut.
    slot = admission.streams.take(ctx.principal, () => ctx.res.destroy());
  } catch (err) {
    // Nothing runs for a refused stream: the generator is closed before its first step.
    await result.return(undefined);
    throw err;
  }
  try {
    return await writeStream(ctx, result, request.id, () => refusalOf(context));
  } finally {
    slot.release();
  }
}

/** Deletes every push config of the caller's task `taskId`. */
async function forgetPushConfigs(tasks: GatewayTaskStore, taskId: string, context: ServerCallContext): Promise<void> {
  for (const json of await tasks.pushConfigs(taskId, context)) {
    const id = (JSON.parse(json) as { id?: unknown }).id;
    if (typeof id === 'string') await tasks.deletePushConfig(taskId, context, id);
  }
}

/** What the endpoint answers with. */
interface Endpoint {
  transport: JsonRpcTransportHandler;
  handler: TaskRequestHandler;
  admission: Admission;
  tasks: GatewayTaskStore;
  /** The refusal a bound made inside the SDK's run of the call with this context, if any. */
  refusalOf(context: ServerCallContext): ProtoError | undefined;
  limits: A2aLimits;
}

/** A push-notification config's JSON at most (URL, token, credentials): bigger ones are invalid params. */
export const MAX_PUSH_CONFIG_BYTES = 8 * 1024;

/** Why the request's push config is too large, or undefined (none, or small enough). */
function oversizedPushConfig(request: JsonRpcRequest): string | undefined {
  const params = request.params ?? {};
  const config = request.method === 'CreateTaskPushNotificationConfig' ? params
    : request.method === 'SendMessage' || request.method === 'SendStreamingMessage' ? (params.configuration as Record<string, unknown> | undefined)?.taskPushNotificationConfig
    : undefined;
  if (config === undefined || Buffer.byteLength(JSON.stringify(config)) <= MAX_PUSH_CONFIG_BYTES) return undefined;
  return `Invalid params: a push notification config is at most ${MAX_PUSH_CONFIG_BYTES} bytes of JSON (URL, token and credentials)`;
}

/**
 * A message that would create a task (it names none) is refused with 429 `QUOTA_EXCEEDED` while
 * the caller keeps `a2a.maxTasksPerPrincipal` tasks (they go `a2a.taskTtl` after their last
 * update). Racing messages may pass together; the store then drops the caller's own oldest tasks,
 * never another caller's. A store full of other callers' tasks (`a2a.maxTasks`) is 503
 * `TASKS_EXHAUSTED`, decided atomically by the store when the executor stores the new task, before
 * its command runs.
 */
async function checkTaskQuota(request: JsonRpcRequest, context: ServerCallContext, endpoint: Endpoint): Promise<void> {
  if (request.method !== 'SendMessage' && request.method !== 'SendStreamingMessage') return;
  const message = request.params?.message as Record<string, unknown> | undefined;
  if (typeof message?.taskId === 'string' && message.taskId !== '') return;
  const max = endpoint.limits.maxTasksPerPrincipal;
  if ((await endpoint.tasks.tasksOf(context)) < max) return;
  endpoint.admission.refused('a2a.tasks', 'principal');
  throw new ProtoError('QUOTA_EXCEEDED', `a caller keeps at most ${max} A2A tasks; each is forgotten a2a.taskTtl after its last update`, { limit: 'a2a.maxTasksPerPrincipal', max });
}

/**
 * Writes each answer of a stream as one SSE `data:` frame; an error ends it with an `error` event.
 * An error before the first answer (an unknown task, a task that takes no message now) is a plain
 * JSON-RPC error response instead, as for the other methods.
 */
async function writeStream(ctx: RequestContext, stream: AsyncGenerator<unknown>, id: JsonRpcId, refusal: () => ProtoError | undefined): Promise<Reply | undefined> {
  const { res } = ctx;
  let first: IteratorResult<unknown>;
  try {
    first = await stream.next();
  } catch (err) {
    const refused = refusal();
    if (refused) return refusalReply(id, refused);
    return { status: 200, body: { jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) } };
  }
  if (first.done) {
    // Ended before any answer: a refusal (a full task store) is answered as the gateway's.
    const refused = refusal();
    if (refused) return refusalReply(id, refused);
  }
  res.writeHead(200, SSE_HEADERS);
  try {
    if (!first.done && !res.destroyed) res.write(`data: ${JSON.stringify(first.value)}\n\n`);
    for await (const item of stream) {
      if (res.destroyed) continue; // the client left: the task still runs to its end (bounded by a2a.timeout)
      res.write(`data: ${JSON.stringify(item)}\n\n`);
    }
  } catch (err) {
    ctx.log.warn({ err }, 'a2a stream failed');
    if (!res.destroyed) res.write(`event: error\ndata: ${JSON.stringify({ jsonrpc: '2.0', id, error: JsonRpcTransportHandler.mapToJSONRPCError(err) })}\n\n`);
  } finally {
    res.end();
  }
  return undefined;
}

function headerOf(ctx: RequestContext, name: string): string | undefined {
  const value = ctx.req.headers[name.toLowerCase()];
  return Array.isArray(value) ? value[0] : value;
}

/** A catalogue entry with what ends its task: `produces`, and for legacy commands the configured result types. */
function executable(entry: CommandEntry | undefined, backends: readonly BackendConfig[]): ExecutableCommand | undefined {
  if (entry === undefined) return undefined;
  const backend = backends.find((b) => b.id === entry.backend);
  const legacy = backend?.kind === 'legacy' ? backend.commands.find((c) => c.type === entry.type) : undefined;
  return { ...entry, successType: legacy?.events.success?.type, failureType: legacy?.events.failure?.type };
}
