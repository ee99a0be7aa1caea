/**
 * `ListTasks` (A2A 1.0) over the tasks a store found for one caller: filtered by context, state and
 * status time, newest status first, paged by an offset token, history and artifacts shaped as
 * asked. Shared by every task store adapter so they answer alike.
 */
import type { ListTasksRequest, ListTasksResponse, Task } from '@a2a-js/sdk';
import type { ServerCallContext } from '@a2a-js/sdk/server';

/** Default page size of `ListTasks`. */
export const DEFAULT_PAGE_SIZE = 50;
/** Largest page size of `ListTasks` (a larger one is capped). */
export const MAX_PAGE_SIZE = 100;

/** One page of `tasks` (all the caller's live tasks) for `params`. */
export function listPage(tasks: Task[], params: ListTasksRequest): ListTasksResponse {
  const found = tasks.filter((task) => matches(task, params)).sort(newestFirst);
  const pageSize = Math.min(Math.max(params.pageSize ?? DEFAULT_PAGE_SIZE, 1), MAX_PAGE_SIZE);
  const offset = params.pageToken ? Math.max(Number.parseInt(params.pageToken, 10) || 0, 0) : 0;
  const page = found.slice(offset, offset + pageSize).map((task) => shaped(task, params));
  const next = offset + pageSize < found.length ? String(offset + pageSize) : '';
  return { tasks: page, nextPageToken: next, pageSize, totalSize: found.length };
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
  const byTime = (b.status?.timestamp ?? '').localeCompare(a.status?.timestamp ?? '');
  return byTime !== 0 ? byTime : b.id.localeCompare(a.id);
}

/** A copy with artifacts only when asked for, and at most `historyLength` messages of history. */
function shaped(task: Task, params: ListTasksRequest): Task {
  const copy = structuredClone(task);
  if (!params.includeArtifacts) copy.artifacts = [];
  if (params.historyLength !== undefined) copy.history = params.historyLength === 0 ? [] : copy.history.slice(-params.historyLength);
  return copy;
}
