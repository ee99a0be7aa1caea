/**
 * `ListTasks` (A2A 1.0) over the tasks a store found for one caller: filtered by context, state and
 * status time, newest status first, paged by a cursor, history and artifacts shaped as asked.
 * Shared by every task store adapter so they answer alike.
 *
 * A page token is opaque to the caller: the position of the last task of the page (its status
 * time and id) and a digest of the query's filters, base64url-encoded. The next page starts after
 * that position (tasks created meanwhile never shift it, unlike an offset); a token that does not
 * decode, or that belongs to other filters, is refused (`RequestMalformedError`, JSON-RPC -32602)
 * instead of silently starting over. A token holds no secret: a forged one only moves the start
 * within the caller's own tasks.
 */
import { createHash } from 'node:crypto';
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import { RequestMalformedError } from '@a2a-js/sdk/errors';
import type { ServerCallContext } from '@a2a-js/sdk/server';

/** Default page size of `ListTasks`. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page size of `ListTasks` (a larger one is capped). */
export const MAX_PAGE_SIZE = 100;

/** Where a page ended: the sort key of its last task. */
interface Position {
  timestamp: string;
  id: string;
}

/** One page of `tasks` (all the caller's live tasks) for `params`; throws `RequestMalformedError` for a bad token or historyLength. */
export function listPage(tasks: Task[], params: ListTasksRequest): ListTasksResponse {
  if (params.historyLength !== undefined && !(Number.isInteger(params.historyLength) && params.historyLength >= 0)) {
    throw new RequestMalformedError(`historyLength must be a non-negative integer (got ${params.historyLength})`);
  }
  const query = queryDigest(params);
  const after = params.pageToken ? positionOf(params.pageToken, query) : undefined;
  const found = tasks.filter((task) => matches(task, params)).sort(newestFirst);
  const pageSize = Math.min(Math.max(params.pageSize ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
  const start = after === undefined ? 0 : found.findIndex((task) => byPosition(keyOf(task), after) > 0);
  const rest = start < 0 ? [] : found.slice(start);
  const page = rest.slice(0, pageSize);
  const last = page.at(-1);
  const next = rest.length > pageSize && last !== undefined ? pageToken(keyOf(last), query) : '';
  return { tasks: page.map((task) => shaped(task, params)), nextPageToken: next, pageSize, totalSize: found.length };
}

/** The token of a page ending at `position` for the query `query`. */
function pageToken(position: Position, query: string): string {
  return Buffer.from(JSON.stringify({ q: query, t: position.timestamp, i: position.id })).toString('base64url');
}

/** The position a token names; throws when it is not one of ours or belongs to another query. */
function positionOf(token: string, query: string): Position {
  let decoded: unknown;
  try {
    decoded = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    decoded = undefined;
  }
  const fields = (typeof decoded === 'object' && decoded !== null ? decoded : {}) as Record<string, unknown>;
  if (typeof fields.q !== 'string' || typeof fields.t !== 'string' || typeof fields.i !== 'string') {
    throw new RequestMalformedError('pageToken is not a token this agent issued; send the nextPageToken of the previous page, or none for the first page');
  }
  if (fields.q !== query) {
    throw new RequestMalformedError('pageToken belongs to a query with other filters (contextId, status, statusTimestampAfter); keep the filters of the first page');
  }
  return { timestamp: fields.t, id: fields.i };
}

/** A digest of the filters that select tasks (not of the page size or shaping). */
function queryDigest(params: ListTasksRequest): string {
  const filters = [params.tenant ?? '', params.contextId ?? '', params.status ?? 0, params.statusTimestampAfter ?? ''];
  return createHash('sha256').update(JSON.stringify(filters)).digest('base64url').slice(0, 16);
}

function keyOf(task: Task): Position {
  return { timestamp: task.status?.timestamp ?? '', id: task.id };
}

/** The tenant and owner a call is scoped to (the authenticated principal's id). */
export function taskScope(context: ServerCallContext): string {
  return `${context.tenant ?? ''}\n${context.user?.userName ?? 'unknown'}`;
}

function matches(task: Task, params: ListTasksRequest): boolean {
  if (params.contextId && task.contextId !== params.contextId) return false;
  if (params.status && task.status?.state !== params.status) return false;
  if (params.statusTimestampAfter) {
    const after = Date.parse(params.statusTimestampAfter);
    if (!(Date.parse(task.status?.timestamp ?? '') > after)) return false;
  }
  return true;
}

function newestFirst(a: Task, b: Task): number {
  return byPosition(keyOf(a), keyOf(b));
}

/** Newest status time first, then by id (descending): a total order, so a position is unambiguous. */
function byPosition(x: Position, y: Position): number {
  const byTime = y.timestamp.localeCompare(x.timestamp);
  return byTime !== 0 ? byTime : y.id.localeCompare(x.id);
}

/** A copy with artifacts only when asked for, and at most `historyLength` messages of history. */
function shaped(task: Task, params: ListTasksRequest): Task {
  const copy = structuredClone(task);
  if (!params.includeArtifacts) copy.artifacts = [];
  if (params.historyLength !== undefined) copy.history = params.historyLength === 0 ? [] : copy.history.slice(-params.historyLength);
  return copy;
}
