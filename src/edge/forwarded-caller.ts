/**
 * The admitted caller as `backends[].forwardIdentity` forwards it: principal id, gateway scopes,
 * and the verified bearer token when it came with one (`backends/identity-headers.ts`).
 */
import type { ForwardedCaller } from '../backends/identity-headers.ts';
import type { Principal } from './credentials.ts';
import { tokenOf } from './oauth2/oauth2-identity.ts';

/** What a backend may learn of `principal`. */
export function forwardedCaller(principal: Principal): ForwardedCaller {
  const token = tokenOf(principal);
  return { principal: principal.id, scopes: principal.scopes, ...(token && { token }) };
}
