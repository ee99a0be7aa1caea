/**
 * The MCP tool set: the same names, arguments and meaning as the protocol's public MCP client
 * (PROTOCOL-NOTES.md, the tool set), so prompts and agent habits carry over. Every input schema is
 * closed (`additionalProperties: false`): an unknown argument is refused, never ignored. The
 * schemas are compiled once, at boot; the tools themselves live in `mcp-tools.ts`.
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import { scopeOf, type Operation } from '../../edge/operations.ts';

/** A JSON Schema object (`type: object`) as MCP's `tools/list` carries it. */
export interface ToolInputSchema {
  type: 'object';
  properties: Record<string, object>;
  required?: string[];
  additionalProperties: false;
  [key: string]: unknown;
}

/** One tool as listed to clients. */
export interface ToolDefinition {
  name: ToolName;
  description: string;
  inputSchema: ToolInputSchema;
}

/** The tool names (also the bounded `tool` label of the metrics). */
export type ToolName =
  | 'get_command_catalogue'
  | 'get_command_schema'
  | 'send_command'
  | 'send_command_and_wait'
  | 'get_query_catalogue'
  | 'get_query_schema'
  | 'execute_query'
  | 'get_manifest'
  | 'get_events'
  | 'get_event_schema'
  | 'sample_event_stream';

/** Longest wait of `send_command_and_wait` and `sample_event_stream`, in seconds. */
export const MAX_WAIT_SECONDS = 120;
/** Most events `sample_event_stream` returns. */
export const MAX_SAMPLE_EVENTS = 1000;

const schemaAndVersion = {
  schema: { type: 'string', minLength: 1, description: 'Kebab-case schema name, e.g. "place-order"' },
  version: { type: 'string', minLength: 1, description: 'Schema version, e.g. "1.0"' },
};
const sendArguments = {
  ...schemaAndVersion,
  source: { type: 'string', minLength: 1, description: 'Optional CloudEvents source of the command (default: the gateway names the MCP caller)' },
  data: { type: 'object', description: 'The command payload; must match the command schema (see get_command_schema)' },
};
// One `anyOf` branch per scalar type, not a `type` array: several model providers' schema
// converters reject or mangle `type` arrays inside `additionalProperties`.
const stringParams = (description: string) => ({
  type: 'object',
  additionalProperties: { anyOf: [{ type: 'string' }, { type: 'number' }, { type: 'boolean' }] },
  description,
});
const noArguments: ToolInputSchema = { type: 'object', properties: {}, additionalProperties: false };

/** The dialect every input schema declares (MCP 2025-11-25 and later: JSON Schema 2020-12 by default). */
export const INPUT_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

/** The tools, in the order `tools/list` shows them; each input schema declares its dialect. */
export const TOOL_DEFINITIONS: ToolDefinition[] = ([
  {
    name: 'get_command_catalogue',
    description: 'List the commands the services accept: schema name, version, type, description. Start here before send_command.',
    inputSchema: noArguments,
  },
  {
    name: 'get_command_schema',
    description: 'The JSON Schema of one command\'s data (what send_command\'s "data" must match).',
    inputSchema: { type: 'object', properties: schemaAndVersion, required: ['schema', 'version'], additionalProperties: false },
  },
  {
    name: 'send_command',
    description:
      'Send a command (schema and version from get_command_catalogue, data matching get_command_schema). Returns the command id, the ' +
      'correlation id of its result events; those events are then pushed to this session as notifications/proto/event.',
    inputSchema: { type: 'object', properties: sendArguments, required: ['schema', 'version', 'data'], additionalProperties: false },
  },
  {
    name: 'send_command_and_wait',
    description:
      'Send a command like send_command, then wait up to timeout_seconds for its result events and return them; ends early on a terminal ' +
      'event (a type ending in Completed, Succeeded, Failed or Rejected).',
    inputSchema: {
      type: 'object',
      properties: { ...sendArguments, timeout_seconds: { type: 'number', exclusiveMinimum: 0, maximum: MAX_WAIT_SECONDS, description: `Seconds to wait, at most ${MAX_WAIT_SECONDS}; default 30` } },
      required: ['schema', 'version', 'data'],
      additionalProperties: false,
    },
  },
  {
    name: 'get_query_catalogue',
    description: 'List the queries the services answer: schema name, version, description.',
    inputSchema: noArguments,
  },
  {
    name: 'get_query_schema',
    description: 'One query\'s document: its parameters (JSON Schema of the query string) and response.',
    inputSchema: { type: 'object', properties: schemaAndVersion, required: ['schema', 'version'], additionalProperties: false },
  },
  {
    name: 'execute_query',
    description: 'Run a query with its parameters (names and types from get_query_schema); returns the result.',
    inputSchema: {
      type: 'object',
      properties: { schema: schemaAndVersion.schema, params: stringParams('Query parameters by name') },
      required: ['schema'],
      additionalProperties: false,
    },
  },
  {
    name: 'get_manifest',
    description: 'The gateway\'s discovery manifest (/.well-known/proto): services, capabilities, authentication.',
    inputSchema: noArguments,
  },
  {
    name: 'get_events',
    description: 'Read the event log (GET /events): params type, correlationId, source, from, to (ISO 8601), limit, after (cursor).',
    inputSchema: { type: 'object', properties: { params: stringParams('GET /events parameters') }, additionalProperties: false },
  },
  {
    name: 'get_event_schema',
    description: 'The JSON Schema of a typed event.',
    inputSchema: { type: 'object', properties: schemaAndVersion, required: ['schema', 'version'], additionalProperties: false },
  },
  {
    name: 'sample_event_stream',
    description:
      'Listen to the live event stream for a while and return what arrived: params type, source, correlationId filter it; ' +
      'last_event_id replays what came after that event first.',
    inputSchema: {
      type: 'object',
      properties: {
        params: stringParams('Stream filters: type, source, correlationId'),
        max_seconds: { type: 'number', exclusiveMinimum: 0, maximum: MAX_WAIT_SECONDS, description: `Seconds to listen, at most ${MAX_WAIT_SECONDS}; default 10` },
        max_events: { type: 'integer', minimum: 1, maximum: MAX_SAMPLE_EVENTS, description: `Stop after this many events, at most ${MAX_SAMPLE_EVENTS}; default 100` },
        last_event_id: { type: 'string', minLength: 1, description: 'Replay the events after this id first' },
      },
      additionalProperties: false,
    },
  },
] as ToolDefinition[]).map((tool) => ({ ...tool, inputSchema: { $schema: INPUT_SCHEMA_DIALECT, ...tool.inputSchema } }));

/** The row of the operations table a tool is checked against: the sending tools write, every other one reads. */
export function toolOperation(name: ToolName): Operation {
  return name === 'send_command' || name === 'send_command_and_wait' ? 'mcp.send_command' : 'mcp.session';
}

/** The tools `scopes` may use, as `tools/list` shows them to that caller. */
export function toolsFor(scopes: ReadonlySet<string>): ToolDefinition[] {
  return TOOL_DEFINITIONS.filter((tool) => scopes.has(scopeOf(toolOperation(tool.name))));
}

/** A compiled check of each tool's arguments: returns the problems, or an empty list. */
export type ArgumentCheck = (args: unknown) => string[];

/** Compiles every tool's input schema once (at boot). */
export function compileArgumentChecks(): Map<ToolName, ArgumentCheck> {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const checks = new Map<ToolName, ArgumentCheck>();
  for (const tool of TOOL_DEFINITIONS) {
    const validate: ValidateFunction = ajv.compile(tool.inputSchema);
    checks.set(tool.name, (args) => {
      if (validate(args ?? {})) return [];
      return (validate.errors ?? []).map((e) => {
        const at = e.instancePath === '' ? 'arguments' : e.instancePath.slice(1).replace(/\//g, '.');
        const extra = e.keyword === 'additionalProperties' ? ` "${String(e.params.additionalProperty)}"` : '';
        return `${at} ${e.message ?? 'is invalid'}${extra}`;
      });
    });
  }
  return checks;
}
