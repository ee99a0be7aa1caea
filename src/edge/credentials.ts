/**
 * Credential verifiers: each recognises one kind of credential in what a caller presented (HTTP
 * headers and query, gRPC metadata) and turns it into a principal. A verifier may be async (a JWT
 * checked against a JWKS, issue 24, is one more verifier in the list); the admission path asks
 * them in order. Keys and tokens are never logged.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AuthConfig, Scope } from '../config/types.ts';
import { ProtoError } from '../errors.ts';

/** The authenticated caller. `anonymous` with every scope when `auth.type` is `none`. */
export interface Principal {
  id: string;
  scopes: ReadonlySet<Scope>;
  /** Values of the identity provider's scope claim, as the token carried them (per-caller `access` rules); absent for keys. */
  grants?: ReadonlySet<string>;
  /**
   * Set when the caller proved itself with an identity provider's token rather than a configured
   * key: the instant (epoch ms) the token stops being accepted (its `exp` plus the clock
   * tolerance), or `Infinity` for a token without `exp`. A stream it opens ends then, and when a
   * reload changes `auth.oauth2`. Absent for keys (valid until a reload removes or changes them).
   */
  tokenExpiresAtMs?: number;
}

/** What a caller presented, in a transport-neutral form: lower-case header (or metadata) names. */
export interface Presented {
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The query of an HTTP request; absent for gRPC. */
  query?: URLSearchParams;
}

/**
 * One kind of credential. Returns the principal when it recognises and accepts the credential,
 * `undefined` when the caller presented no credential of its kind (the next verifier is asked),
 * and throws 401 `UNAUTHENTICATED` when it recognises the credential but refuses it.
 */
export type CredentialVerifier = (presented: Presented) => Promise<Principal | undefined> | Principal | undefined;

/** The principal of an unauthenticated gateway (`auth.type: none`). */
export const ANONYMOUS: Principal = { id: 'anonymous', scopes: new Set<Scope>(['read', 'write', 'admin']) };

/** RFC 9110 §11.6.1: a 401 names the scheme the caller should use. */
export function challengeOf(auth: AuthConfig): Record<string, string> {
  return { 'WWW-Authenticate': auth.type === 'bearer' ? 'Bearer' : `ApiKey header="${auth.header}"` };
}

/**
 * The configured keys (`auth.keys`) as a verifier: in `auth.header`, as `Authorization: Bearer`, or
 * in `auth.queryParam` (apiKey), or only as a bearer token (`auth.type: bearer`). Keys are compared
 * in constant time (SHA-256 digests, `timingSafeEqual` against every key), digests computed once.
 */
export function apiKeyVerifier(auth: AuthConfig): CredentialVerifier {
  const keys = auth.keys.map((k) => ({ digest: digest(k.key), principal: { id: k.id, scopes: new Set(k.scopes) } as Principal }));
  const header = auth.header.toLowerCase();
  const challenge = challengeOf(auth);
  return (presented) => {
    const credential = presentedKey(auth, header, presented);
    if (credential === undefined) return undefined;
    const principal = findKey(keys, credential.value);
    // A bearer token that is no key may be another verifier's (a JWT): the next one is asked.
    if (!principal && !credential.bearer) throw new ProtoError('UNAUTHENTICATED', 'the credentials are not valid', undefined, challenge);
    return principal;
  };
}

/** The names of credential carriers, so the pass-through can strip them. */
export function credentialCarriers(auth: AuthConfig): { headers: string[]; queryParam?: string } {
  const queryParam = auth.type === 'apiKey' ? auth.queryParam : auth.type === 'oauth2' ? auth.oauth2?.queryParam : undefined;
  return { headers: ['authorization', auth.header.toLowerCase()], queryParam };
}

/** The key presented, and whether it came as a bearer token (which other verifiers may also read). */
function presentedKey(auth: AuthConfig, header: string, presented: Presented): { value: string; bearer: boolean } | undefined {
  const bearer = bearerToken(first(presented.headers.authorization));
  const fromHeader = auth.type === 'bearer' ? undefined : first(presented.headers[header]);
  if (fromHeader) return { value: fromHeader, bearer: false };
  if (bearer !== undefined) return { value: bearer, bearer: true };
  const fromQuery = auth.type === 'apiKey' && auth.queryParam ? presented.query?.get(auth.queryParam) : undefined;
  return fromQuery ? { value: fromQuery, bearer: false } : undefined;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function bearerToken(value: string | undefined): string | undefined {
  const match = value ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
  return match ? match[1] : undefined;
}

/** Compares against every key without an early exit, so timing does not reveal which one matched. */
function findKey(keys: Array<{ digest: Buffer; principal: Principal }>, presented: string): Principal | undefined {
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
