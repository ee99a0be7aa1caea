/**
 * Authentication (DESIGN.md `auth`): `none`, `apiKey` (header, `Authorization: Bearer`, or the
 * optional query parameter) and `bearer`. Keys are compared in constant time (SHA-256 digests and
 * `timingSafeEqual` against every configured key) and never logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { AuthConfig, Scope } from '../config/types.ts';
import { ProtoError } from '../errors.ts';
import type { Principal } from './route.ts';

const ALL_SCOPES: ReadonlySet<Scope> = new Set<Scope>(['read', 'write', 'admin']);

/** The principal of an unauthenticated gateway (`auth.type: none`). */
export const ANONYMOUS: Principal = { id: 'anonymous', scopes: ALL_SCOPES };

/** Resolves the caller of a request, or throws 401 `UNAUTHENTICATED`. */
export type Authenticator = (req: IncomingMessage, query: URLSearchParams) => Principal;

interface KeyEntry {
  digest: Buffer;
  principal: Principal;
}

/** Builds the authenticator for an `auth` section (digests computed once, at boot). */
export function createAuthenticator(auth: AuthConfig): Authenticator {
  if (auth.type === 'none') return () => ANONYMOUS;
  const keys: KeyEntry[] = auth.keys.map((k) => ({ digest: digest(k.key), principal: { id: k.id, scopes: new Set(k.scopes) } }));
  const header = auth.header.toLowerCase();
  // RFC 9110 §11.6.1: a 401 names the scheme the caller should use.
  const challenge = { 'WWW-Authenticate': auth.type === 'bearer' ? 'Bearer' : `ApiKey header="${auth.header}"` };
  return (req, query) => {
    const presented = presentedCredential(auth, header, req, query);
    if (presented === undefined) throw new ProtoError('UNAUTHENTICATED', 'credentials are required', undefined, challenge);
    const principal = findKey(keys, presented);
    if (!principal) throw new ProtoError('UNAUTHENTICATED', 'the credentials are not valid', undefined, challenge);
    return principal;
  };
}

/** Throws 403 `FORBIDDEN` unless the principal holds `scope`. */
export function requireScope(principal: Principal, scope: Scope): void {
  if (!principal.scopes.has(scope)) {
    throw new ProtoError('FORBIDDEN', `this operation needs the "${scope}" scope`, { scope });
  }
}

/** The names of credential carriers, so the pass-through can strip them. */
export function credentialCarriers(auth: AuthConfig): { headers: string[]; queryParam?: string } {
  return { headers: ['authorization', auth.header.toLowerCase()], queryParam: auth.type === 'apiKey' ? auth.queryParam : undefined };
}

function presentedCredential(auth: AuthConfig, header: string, req: IncomingMessage, query: URLSearchParams): string | undefined {
  const bearer = bearerToken(req.headers.authorization);
  if (auth.type === 'bearer') return bearer;
  const fromHeader = req.headers[header];
  if (typeof fromHeader === 'string' && fromHeader) return fromHeader;
  if (bearer !== undefined) return bearer;
  if (auth.queryParam) return query.get(auth.queryParam) ?? undefined;
  return undefined;
}

function bearerToken(value: string | undefined): string | undefined {
  const match = value ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
  return match ? match[1] : undefined;
}

/** Compares against every key without an early exit, so timing does not reveal which one matched. */
function findKey(keys: KeyEntry[], presented: string): Principal | undefined {
  const candidate = digest(presented);
  let found: Principal | undefined;
  for (const key of keys) {
    if (timingSafeEqual(key.digest, candidate) && !found) found = key.principal;
  }
  return found;
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
