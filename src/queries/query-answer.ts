/**
 * What a backend's answer to a query becomes (PROTOCOL-NOTES.md, Queries; DESIGN.md, Errors):
 *
 * - 2xx: the same status and body (backend URLs rewritten by the caller).
 * - 401, 403, 407: 503 `BACKEND_UNAVAILABLE`: the backend refused the *gateway's* credentials
 *   (`backends[].headers`); the caller can do nothing about it, and must not think its own key bad.
 * - any other 4xx: passed on with its status. A protocol error body (`{ error: { code, message } }`)
 *   is kept; any other body becomes one, its code chosen by status (400 and 422
 *   `INVALID_PARAMETER`, 404 and 410 `NOT_FOUND`, 409 `CONFLICT`, 429 `RATE_LIMITED` with the
 *   backend's `Retry-After`), `details.status` the backend's status.
 * - 504: 504 `BACKEND_TIMEOUT`; any other 5xx: 503 `BACKEND_UNAVAILABLE` (never a 500: the gateway
 *   did not fail).
 */
import type { BackendAnswer } from '../backends/backend-http.ts';
import { ProtoError, type ErrorCode } from '../errors.ts';

/** The answer of a query, as the HTTP edge sends it. */
export interface QueryResult {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/** Codes of a backend's 4xx that carries no protocol error body. */
const CODE_BY_STATUS: Record<number, ErrorCode> = { 400: 'INVALID_PARAMETER', 404: 'NOT_FOUND', 409: 'CONFLICT', 410: 'NOT_FOUND', 422: 'INVALID_PARAMETER', 429: 'RATE_LIMITED' };

/** True for an answer that says the backend is unwell (for its circuit). */
export function isBackendFailure(status: number): boolean {
  return status >= 500;
}

/** Throws for the answers that are not passed on (5xx, refused credentials); the refusal a 4xx becomes otherwise. */
export function refusalOf(answer: BackendAnswer): QueryResult {
  const { status } = answer;
  if (status === 504) throw new ProtoError('BACKEND_TIMEOUT', 'the backend timed out', { status });
  if (status >= 500) throw new ProtoError('BACKEND_UNAVAILABLE', `the backend answered ${status}`, { status });
  if (status === 401 || status === 403 || status === 407) {
    throw new ProtoError('BACKEND_UNAVAILABLE', `the backend refused the gateway's credentials (${status})`, { status });
  }
  const result: QueryResult = { status, body: errorBody(answer) };
  if (status === 429 && answer.retryAfter !== undefined) result.headers = { 'Retry-After': answer.retryAfter };
  return result;
}

/** True for a 2xx. */
export function isSuccess(status: number): boolean {
  return status >= 200 && status < 300;
}

function errorBody(answer: BackendAnswer): { error: Record<string, unknown> } {
  const body = answer.body as { error?: { code?: unknown; message?: unknown; details?: unknown }; message?: unknown } | undefined;
  const error = typeof body === 'object' && body !== null ? body.error : undefined;
  if (error && typeof error.code === 'string' && typeof error.message === 'string') {
    const details = typeof error.details === 'object' && error.details !== null ? { details: error.details } : {};
    return { error: { code: error.code, message: error.message, ...details } };
  }
  const own = typeof body === 'object' && body !== null && typeof body.message === 'string' ? body.message.slice(0, 1000) : undefined;
  return { error: { code: CODE_BY_STATUS[answer.status] ?? 'INVALID_PARAMETER', message: own ?? `the backend answered ${answer.status}`, details: { status: answer.status } } };
}
