/**
 * The one table of operations and the scope each needs, for every transport (DESIGN.md,
 * Conventions: Scopes; "writes need `write` on every transport"). A transport never names a scope
 * itself: it names its operation here and the admission path checks it, so a new transport or
 * method cannot pick a weaker scope by accident.
 */
import type { Scope } from '../config/types.ts';

export const OPERATION_SCOPES = {
  /** Every HTTP GET: events, catalogues, queries, subscriptions, status, metrics, pass-through reads. */
  'http.read': 'read',
  /** HTTP mutations: `POST /commands` (root and per service), `POST`/`DELETE /subscriptions`, pass-through writes. */
  'http.write': 'write',
  /** Runtime services: `POST /services`, `DELETE /services/{id}`, pause and resume. */
  'services.manage': 'admin',
  /** `GET /events/stream` (also counted in the stream quota). */
  'sse.subscribe': 'read',
  'grpc.Subscribe': 'read',
  'grpc.ListEvents': 'read',
  'grpc.SubmitCommand': 'write',
  /** The MCP endpoint itself (initialize, session stream, end of session) and its read-only tools. */
  'mcp.session': 'read',
  'mcp.send_command': 'write',
  /** The A2A JSON-RPC endpoint; each method is then checked on its own row below. */
  'a2a.endpoint': 'read',
  /** May submit a command: a write. */
  'a2a.SendMessage': 'write',
  'a2a.SendStreamingMessage': 'write',
  'a2a.GetTask': 'read',
  'a2a.ListTasks': 'read',
  'a2a.SubscribeToTask': 'read',
  'a2a.CancelTask': 'write',
  /** Makes the gateway POST to a URL the caller chooses: a write. */
  'a2a.CreateTaskPushNotificationConfig': 'write',
  'a2a.GetTaskPushNotificationConfig': 'read',
  'a2a.ListTaskPushNotificationConfigs': 'read',
  'a2a.DeleteTaskPushNotificationConfig': 'write',
  /** The extended agent card (the command catalogue). */
  'a2a.GetExtendedAgentCard': 'read',
} as const satisfies Record<string, Scope>;

/** An operation a caller can ask for. */
export type Operation = keyof typeof OPERATION_SCOPES;

/** The scope `operation` needs. */
export function scopeOf(operation: Operation): Scope {
  return OPERATION_SCOPES[operation];
}

/** The operation of an A2A JSON-RPC method, or undefined for a method the table does not know (the SDK answers "method not found"). */
export function a2aOperation(method: unknown): Operation | undefined {
  const operation = `a2a.${String(method)}`;
  return Object.hasOwn(OPERATION_SCOPES, operation) && operation !== 'a2a.endpoint' ? (operation as Operation) : undefined;
}

/** The default operation of an HTTP route by its method: GET reads, anything else writes. */
export function httpOperation(method: string): Operation {
  return method === 'GET' || method === 'HEAD' ? 'http.read' : 'http.write';
}
