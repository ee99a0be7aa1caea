/**
 * What each MCP tool does, over the gateway's own pipelines (no copies): the command and query
 * catalogues, the one command ingestion, the query runner, the event log page reader, the event
 * catalogue and the public manifest. A refusal is a tool error (`isError`) whose text says what is
 * wrong (MCP clients show the model only that text); arguments are checked against the closed
 * input schemas first.
 */
import { randomUUID } from 'node:crypto';
import type { AccessRules, EventVisibility } from '../../edge/access-rules.ts';
import type { CommandCatalogue } from '../../catalogue/command-catalogue.ts';
import type { EventCatalogue } from '../../catalogue/event-catalogue.ts';
import type { QueryCatalogue } from '../../catalogue/query-catalogue.ts';
import type { CommandIngestion } from '../../commands/ingestion.ts';
import { errorStatus, isProtoError, ProtoError, type ErrorCode } from '../../errors.ts';
import type { Principal } from '../../http/route.ts';
import { newTraceparent } from '../../http/trace.ts';
import type { Admission } from '../../edge/admission.ts';
import { forwardedCaller } from '../../edge/forwarded-caller.ts';
import type { CloudEvent, EventFilter } from '../../log/EventLog.ts';
import type { EventList } from '../../log/history.ts';
import type { PublicManifest } from '../../manifest/public-manifest.ts';
import type { McpMetrics } from '../../metrics/mcp.ts';
import type { QueryRunner } from '../../queries/query-runner.ts';
import type { LiveTail } from '../live-tail/live-tail.ts';
import { openTailStream } from '../live-tail/tail-stream.ts';
import type { CommandFollow } from './command-follow.ts';
import { compileArgumentChecks, TOOL_DEFINITIONS, toolOperation, type ToolName } from './mcp-tool-set.ts';
import { activeTraceparent, annotate, inSpan, SpanKind, startSpan } from '../../telemetry/tracing.ts';

/** The gateway surface the tools run on. */
export interface ToolSurface {
  commands: { catalogue: CommandCatalogue; ingestion: CommandIngestion };
  queries: { catalogue: QueryCatalogue; runner: QueryRunner };
  events: {
    catalogue: EventCatalogue;
    /** One page of `GET /events` for these parameters, of the events the caller sees. */
    page(query: URLSearchParams, visible: EventVisibility): Promise<EventList>;
    /** `filterOf` of the events routes: the stream filter of these parameters. */
    filter(query: URLSearchParams): EventFilter;
  };
  manifest: PublicManifest;
  tail: LiveTail;
  metrics: McpMetrics;
  /** The admission path: tools that write are checked against the operations table. */
  admission: Pick<Admission, 'authorize'>;
  /** Per-caller catalogues: what a caller may not use is neither listed nor described nor run (unknown, as on HTTP). */
  access: AccessRules;
}

/** The caller a tool runs for, and how it follows a command's events. */
export interface ToolSession {
  principal: Principal;
  /** Adds `commandId` to the caller's follow list: its events are pushed to the caller's stream (any replica). */
  follow(commandId: string): Promise<void>;
  /** Removes it again (the command was refused). */
  unfollow(commandId: string): Promise<void>;
  /** Opens a follow of `commandId` for this call only (`send_command_and_wait`: each event also goes out as progress). */
  watch(commandId: string): Promise<CommandFollow>;
}

/** The result of `tools/call` (MCP `CallToolResult`). */
export interface ToolResult {
  content: Array<{ type: 'text'; text: string }>;
  isError?: boolean;
  [key: string]: unknown;
}

type Args = Record<string, unknown>;
type Tool = (args: Args, session: ToolSession) => Promise<unknown>;

/** Runs tool calls; built once, at boot. */
export type ToolRunner = (name: string, args: unknown, session: ToolSession) => Promise<ToolResult>;

/** Builds the tool runner over `surface`. */
export function createToolRunner(surface: ToolSurface): ToolRunner {
  const checks = compileArgumentChecks();
  const tools = toolTable(surface);
  return (name, args, session) => {
    const tool = tools.get(name as ToolName);
    // The server span of the tool call (MCP conventions); an unknown name is not an attribute (it is the caller's text).
    const toolName = tool ? name : 'unknown';
    const span = startSpan(() => `tools/call ${toolName}`, {
      kind: SpanKind.SERVER,
      attributes: () => ({ 'mcp.method.name': 'tools/call', 'rpc.system': 'jsonrpc', 'rpc.method': 'tools/call', 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': toolName }),
    });
    return inSpan(span, async () => {
      const result = await runTool(surface, checks, tool, name, args, session);
      if (result.isError) annotate(span, () => ({ 'error.type': 'tool_error' }));
      return result;
    });
  };
}

/** One tool call: its arguments checked, its refusals as tool errors. */
async function runTool(surface: ToolSurface, checks: ReturnType<typeof compileArgumentChecks>, tool: Tool | undefined, name: string, args: unknown, session: ToolSession): Promise<ToolResult> {
  const check = checks.get(name as ToolName);
  if (!tool || !check) return failure(surface, 'unknown', `unknown tool "${name}"; known tools: ${TOOL_DEFINITIONS.map((t) => t.name).join(', ')}`);
  const problems = check(args);
  if (problems.length > 0) return failure(surface, name, `invalid arguments for ${name}: ${problems.join('; ')}`);
  try {
    const value = await tool((args ?? {}) as Args, session);
    surface.metrics.toolCall(name, 'ok');
    return { content: [{ type: 'text', text: JSON.stringify(value) }] };
  } catch (err) {
    if (!isProtoError(err)) throw err;
    return failure(surface, name, refusalText(err));
  }
}

function toolTable(surface: ToolSurface): Map<ToolName, Tool> {
  const { commands, queries, events } = surface;
  const view = (session: ToolSession) => surface.access.viewOf(session.principal);
  return new Map<ToolName, Tool>([
    // Per-caller catalogues: what the caller may not use is not listed, and naming it is refused as unknown.
    ['get_command_catalogue', async (_a, s) => ({ commands: commands.catalogue.list(undefined, view(s).command) })],
    ['get_command_schema', async (a, s) => commands.catalogue.schemaDocument(String(a.schema), String(a.version), undefined, view(s).command)],
    ['send_command', async (a, s) => {
      // Followed before it is submitted: no event of it can come before the follow exists.
      surface.admission.authorize(s.principal, toolOperation('send_command'));
      const id = randomUUID();
      await s.follow(id);
      await submitOr(commands.ingestion, id, a, s, () => s.unfollow(id));
      return { id, correlationId: id, push: 'notifications/proto/event' };
    }],
    ['send_command_and_wait', async (a, s) => {
      surface.admission.authorize(s.principal, toolOperation('send_command_and_wait'));
      const id = randomUUID();
      const follow = await s.watch(id);
      await submitOr(commands.ingestion, id, a, s, async () => follow.close());
      const ended = await waitFor(follow.ended, seconds(a.timeout_seconds, 30));
      follow.close();
      return { id, correlationId: id, events: [...follow.events], complete: ended === 'terminal' };
    }],
    ['get_query_catalogue', async (_a, s) => ({ queries: queries.catalogue.list(undefined, view(s).query) })],
    ['get_query_schema', async (a, s) => queries.catalogue.document(String(a.schema), String(a.version), undefined, view(s).query)],
    ['execute_query', async (a, s) => {
      const result = await queries.runner.run({ schema: String(a.schema), query: searchParams(a.params), traceparent: activeTraceparent() ?? newTraceparent(), caller: forwardedCaller(s.principal), visible: view(s).query });
      if (result.status >= 400) throw queryRefusal(result.status, result.body);
      return result.body ?? null;
    }],
    ['get_manifest', async () => surface.manifest.current()],
    ['get_events', async (a, s) => events.page(searchParams(a.params), view(s).log)],
    ['get_event_schema', async (a, s) => events.catalogue.schema(String(a.schema), String(a.version), undefined, view(s).event)],
    ['sample_event_stream', async (a, s) => sample(surface, a, view(s).log)],
  ]);
}

/** Builds the envelope the public MCP client builds and runs it through the one ingestion; on a refusal runs `undo` and rethrows. */
async function submitOr(ingestion: CommandIngestion, id: string, args: Args, session: ToolSession, undo: () => Promise<void>): Promise<void> {
  const schema = String(args.schema);
  const envelope = {
    specversion: '1.0',
    id,
    source: typeof args.source === 'string' ? args.source : `urn:proto-gateway:mcp:${session.principal.id}`,
    type: pascalCase(schema),
    datacontenttype: 'application/json',
    dataschema: `${schema}/${String(args.version)}`,
    time: new Date().toISOString(),
    data: args.data,
  };
  try {
    await ingestion.submit({ principal: session.principal.id, caller: session.principal, readBody: async () => envelope, traceparent: activeTraceparent() ?? newTraceparent() });
  } catch (err) {
    await undo().catch(() => {});
    throw err;
  }
}

/** Listens to the live tail with the stream filters for a while; returns what arrived. */
async function sample(surface: ToolSurface, args: Args, visible: EventVisibility): Promise<{ events: CloudEvent[] }> {
  const maxEvents = typeof args.max_events === 'number' ? args.max_events : 100;
  const stream = openTailStream(surface.tail, {
    transport: 'mcp',
    filter: surface.events.filter(searchParams(args.params)),
    visible,
    closeOnTerminal: false,
    ...(typeof args.last_event_id === 'string' && { afterId: args.last_event_id }),
  });
  const timer = setTimeout(() => stream.close(), seconds(args.max_seconds, 10) * 1000);
  const events: CloudEvent[] = [];
  try {
    for await (const event of stream) {
      events.push(event);
      if (events.length >= maxEvents) break;
    }
  } finally {
    clearTimeout(timer);
    stream.close();
  }
  return { events };
}

/** `place-order` → `PlaceOrder` (the envelope `type` of a kebab-case schema name). */
export function pascalCase(schema: string): string {
  return schema.split(/[-_]/).filter(Boolean).map((part) => part[0].toUpperCase() + part.slice(1)).join('');
}

function searchParams(params: unknown): URLSearchParams {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries((params ?? {}) as Record<string, unknown>)) query.set(key, String(value));
  return query;
}

function seconds(value: unknown, fallback: number): number {
  return typeof value === 'number' ? value : fallback;
}

/** The promise's value, or `undefined` after `seconds`. */
async function waitFor<T>(promise: Promise<T>, seconds: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), seconds * 1000)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** A backend's refusal of a query (passed through as a status and body by the runner) as a catalogue error. */
function queryRefusal(status: number, body: unknown): ProtoError {
  const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  const code = typeof error?.code === 'string' && error.code in errorStatus ? (error.code as ErrorCode) : status >= 500 ? 'BACKEND_UNAVAILABLE' : 'INVALID_PARAMETER';
  const message = typeof error?.message === 'string' ? error.message : `the query answered ${status}: ${JSON.stringify(body ?? null)}`;
  return new ProtoError(code, message, { status });
}

function refusalText(err: ProtoError): string {
  return `${err.code}: ${err.message}`;
}

function failure(surface: ToolSurface, tool: string, text: string): ToolResult {
  surface.metrics.toolCall(tool, 'error');
  return { content: [{ type: 'text', text }], isError: true };
}
