/**
 * What a backend learns of the caller (`backends[].forwardIdentity`):
 *
 * - `none` (default): nothing.
 * - `header`: `X-Proto-Principal` (the principal id) and, when known, `X-Proto-Scopes` (the
 *   gateway scopes, space-separated). Commands are dispatched later from the outbox and carry the
 *   principal recorded when they were accepted (scopes are not recorded, so they carry none).
 * - `token`: the caller's verified bearer token as `Authorization: Bearer …`, for queries and the
 *   pass-through (backends that verify the token themselves). A command never carries a token (it
 *   may have expired by the time the outbox dispatches it), nor does a caller that used an API
 *   key: both get the `header` form instead.
 *
 * Callers never choose these headers: the pass-through removes any `X-Proto-Principal` or
 * `X-Proto-Scopes` a caller sent, whatever the mode.
 */
import type { ForwardIdentity } from '../config/types.ts';

/** The principal header (lower case, as Node keeps request headers). */
export const PRINCIPAL_HEADER = 'x-proto-principal';
/** The scopes header. */
export const SCOPES_HEADER = 'x-proto-scopes';
/** Headers a caller may not send on to a backend. */
export const IDENTITY_HEADERS = [PRINCIPAL_HEADER, SCOPES_HEADER];

/** The caller as a backend may learn it. */
export interface ForwardedCaller {
  principal: string;
  scopes?: Iterable<string>;
  /** The verified bearer token the caller presented, if any (never for commands). */
  token?: string;
}

/** The headers `mode` adds for `caller` (none for an anonymous gateway's caller in `none` mode). */
export function identityHeaders(mode: ForwardIdentity, caller: ForwardedCaller | undefined): Record<string, string> {
  if (mode === 'none' || !caller) return {};
  if (mode === 'token' && caller.token) return { authorization: `Bearer ${caller.token}` };
  const headers: Record<string, string> = { [PRINCIPAL_HEADER]: headerSafe(caller.principal) };
  const scopes = caller.scopes ? [...caller.scopes].join(' ') : '';
  if (scopes) headers[SCOPES_HEADER] = scopes;
  return headers;
}

/** A principal id from a token may hold any character: outside printable ASCII it is percent-encoded (RFC 3986 §2.1), so no header can be split. */
function headerSafe(value: string): string {
  return /^[\x21-\x7e]+$/.test(value) ? value : encodeURIComponent(value);
}
