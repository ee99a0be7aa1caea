/**
 * The JSON-RPC 2.0 envelope of an A2A call, checked before the SDK sees it, so a generic client
 * gets the codes JSON-RPC 2.0 (section 5.1) prescribes rather than the SDK's catch-all -32602:
 *
 * - `-32700` Parse error: the body is not JSON (also an empty body or one nested beyond
 *   `server.maxJsonDepth`);
 * - `-32600` Invalid Request: not one request object (a batch array, a primitive), `jsonrpc` not
 *   exactly `"2.0"`, no `method` string, an `id` that is missing or not a string, integer or null
 *   (A2A methods are requests, never notifications), `params` neither an object nor an array;
 * - `-32601` Method not found: a method A2A 1.0's JSON-RPC binding does not define;
 * - `-32602` Invalid params: by-position (array) params, a `historyLength` that is not a
 *   non-negative integer (`params.historyLength`, `params.configuration.historyLength`), or params
 *   the method's request type cannot decode (the SDK would fail on them with a TypeError, answered
 *   as -32603 Internal error: e.g. `null` among a message's `parts`).
 *
 * Every answer is a JSON-RPC response object; the A2A HTTP binding for JSON-RPC carries them with
 * HTTP 200 (errors included), as the SDK's own Express handler does, except the gateway's
 * admission refusals (`jsonRpcRefusal`), which keep their HTTP status.
 */
import {
  CancelTaskRequest, DeleteTaskPushNotificationConfigRequest, GetExtendedAgentCardRequest, GetTaskPushNotificationConfigRequest, GetTaskRequest,
  ListTaskPushNotificationConfigsRequest, ListTasksRequest, SendMessageRequest, SubscribeToTaskRequest, TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { isProtoError, type ProtoError } from '../../errors.ts';

/** The methods of A2A 1.0's JSON-RPC binding, each with the decoder of its params (the SDK's own). */
const DECODERS: Readonly<Record<string, (params: unknown) => unknown>> = {
  SendMessage: SendMessageRequest.fromJSON,
  SendStreamingMessage: SendMessageRequest.fromJSON,
  GetTask: GetTaskRequest.fromJSON,
  ListTasks: ListTasksRequest.fromJSON,
  CancelTask: CancelTaskRequest.fromJSON,
  SubscribeToTask: SubscribeToTaskRequest.fromJSON,
  CreateTaskPushNotificationConfig: TaskPushNotificationConfig.fromJSON,
  GetTaskPushNotificationConfig: GetTaskPushNotificationConfigRequest.fromJSON,
  ListTaskPushNotificationConfigs: ListTaskPushNotificationConfigsRequest.fromJSON,
  DeleteTaskPushNotificationConfig: DeleteTaskPushNotificationConfigRequest.fromJSON,
  GetExtendedAgentCard: GetExtendedAgentCardRequest.fromJSON,
};

/** The methods of A2A 1.0's JSON-RPC binding. */
export const A2A_METHODS: ReadonlySet<string> = new Set(Object.keys(DECODERS));

/**
 * JSON-RPC 2.0 error codes (section 5.1), and the one implementation-defined server error (-32000,
 * in the range JSON-RPC leaves to servers and A2A does not use) of the gateway's own refusals.
 */
export const JSON_RPC = { PARSE_ERROR: -32700, INVALID_REQUEST: -32600, METHOD_NOT_FOUND: -32601, INVALID_PARAMS: -32602, INTERNAL_ERROR: -32603, GATEWAY_REFUSAL: -32000 } as const;

/** A request id: a string, an integer, or null. */
export type JsonRpcId = string | number | null;

/** A JSON-RPC error response. */
export interface JsonRpcErrorResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  error: { code: number; message: string; data?: unknown };
}

/** A request that passed the envelope checks (params still the method's to check). */
export interface JsonRpcRequest {
  jsonrpc: '2.0';
  id: JsonRpcId;
  method: string;
  params?: Record<string, unknown>;
}

/** The checked request, or the error response to send instead. */
export type CheckedRequest = { request: JsonRpcRequest } | { refusal: JsonRpcErrorResponse };

/**
 * Reads the body with `read` (the gateway's bounded JSON reader) and checks it. A body that is not
 * JSON is a -32700 answer; any other error of `read` (too large, client gone) is thrown on.
 */
export async function readJsonRpcRequest(read: () => Promise<unknown>): Promise<CheckedRequest> {
  let body: unknown;
  try {
    body = await read();
  } catch (err) {
    if (isProtoError(err) && err.code === 'INVALID_JSON') return { refusal: jsonRpcError(null, JSON_RPC.PARSE_ERROR, `Parse error: ${err.message}`) };
    throw err;
  }
  return checkJsonRpcRequest(body);
}

/** Checks a parsed body against JSON-RPC 2.0 and the A2A method set. */
export function checkJsonRpcRequest(body: unknown): CheckedRequest {
  if (Array.isArray(body)) return refuse(null, JSON_RPC.INVALID_REQUEST, 'Invalid Request: batch requests are not supported; send one request object');
  if (typeof body !== 'object' || body === null) return refuse(null, JSON_RPC.INVALID_REQUEST, 'Invalid Request: the body must be a JSON-RPC request object');
  const fields = body as Record<string, unknown>;
  if (!('id' in fields)) return refuse(null, JSON_RPC.INVALID_REQUEST, 'Invalid Request: "id" is required (A2A methods are requests, not notifications)');
  if (!isId(fields.id)) return refuse(null, JSON_RPC.INVALID_REQUEST, 'Invalid Request: "id" must be a string, an integer or null');
  const id = fields.id;
  if (fields.jsonrpc !== '2.0') return refuse(id, JSON_RPC.INVALID_REQUEST, 'Invalid Request: "jsonrpc" must be exactly "2.0"');
  if (typeof fields.method !== 'string' || fields.method.length === 0) return refuse(id, JSON_RPC.INVALID_REQUEST, 'Invalid Request: "method" must be a non-empty string');
  const { method, params } = fields;
  if (params !== undefined && (typeof params !== 'object' || params === null)) return refuse(id, JSON_RPC.INVALID_REQUEST, 'Invalid Request: "params" must be an object');
  if (!A2A_METHODS.has(method)) return refuse(id, JSON_RPC.METHOD_NOT_FOUND, `Method not found: ${method} is not an A2A 1.0 method`);
  if (Array.isArray(params)) return refuse(id, JSON_RPC.INVALID_PARAMS, 'Invalid params: A2A methods take named params (an object), not an array');
  const problem = paramsProblem(params as Record<string, unknown> | undefined) ?? decodeProblem(method, params);
  if (problem !== undefined) return refuse(id, JSON_RPC.INVALID_PARAMS, `Invalid params: ${problem}`);
  return { request: { jsonrpc: '2.0', id, method, params: params as Record<string, unknown> | undefined } };
}

/** A JSON-RPC error response. */
export function jsonRpcError(id: JsonRpcId, code: number, message: string): JsonRpcErrorResponse {
  return { jsonrpc: '2.0', id, error: { code, message } };
}

/**
 * A refusal of the gateway's admission path (401, 403, 413, 429, 503) as a JSON-RPC error:
 * -32000 with the catalogue error (`code`, `message`, `details`) as `data` (-32603 for the
 * internal error). The HTTP status stays the refusal's (A2A section 4: authentication failures
 * SHOULD be HTTP 401/403 with `WWW-Authenticate`), and the SDK's client reads a JSON-RPC error body
 * at any status, so every answer of `/a2a` is a JSON-RPC response object.
 */
export function jsonRpcRefusal(id: JsonRpcId, error: ProtoError): JsonRpcErrorResponse {
  const code = error.code === 'INTERNAL' ? JSON_RPC.INTERNAL_ERROR : JSON_RPC.GATEWAY_REFUSAL;
  return { jsonrpc: '2.0', id, error: { code, message: error.message, data: error.toBody().error } };
}

function refuse(id: JsonRpcId, code: number, message: string): CheckedRequest {
  return { refusal: jsonRpcError(id, code, message) };
}

function isId(value: unknown): value is JsonRpcId {
  return value === null || typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value));
}

/** The first parameter the SDK would take silently although it is wrong. */
function paramsProblem(params: Record<string, unknown> | undefined): string | undefined {
  if (params === undefined) return undefined;
  if (!isHistoryLength(params.historyLength)) return 'historyLength must be a non-negative integer';
  const configuration = params.configuration;
  if (typeof configuration === 'object' && configuration !== null && !isHistoryLength((configuration as Record<string, unknown>).historyLength)) {
    return 'configuration.historyLength must be a non-negative integer';
  }
  return undefined;
}

/** Why the method's request type cannot decode `params`, or undefined when it can. */
function decodeProblem(method: string, params: unknown): string | undefined {
  try {
    DECODERS[method]!(params ?? {});
    return undefined;
  } catch (err) {
    return `the params are not a ${method} request (${err instanceof Error ? err.message : String(err)})`;
  }
}

/** Absent, or a non-negative integer (proto3 JSON also allows it as a string of digits). */
function isHistoryLength(value: unknown): boolean {
  if (value === undefined || value === null) return true;
  if (typeof value === 'number') return Number.isInteger(value) && value >= 0;
  return typeof value === 'string' && /^\d{1,9}$/.test(value);
}
