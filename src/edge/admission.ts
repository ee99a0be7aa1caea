/**
 * The one admission path (DESIGN.md, Conventions: order of checks). Every transport (HTTP routes,
 * pass-through, SSE, gRPC, MCP, A2A, the console's API calls) resolves its caller, checks the
 * operation's scope and takes its quota slots here, so a new transport cannot forget a check:
 *
 *   readiness (the transport) → route (the transport) → authentication 401 → scope 403
 *   → rate limit and quota 429 → body size 413 → JSON syntax and depth 400 → the endpoint's checks
 *
 * Refusals are catalogued `ProtoError`s; each transport maps them to its own status (gRPC codes,
 * JSON-RPC errors) with the catalogue code attached.
 */
import type { AuthConfig, GatewayConfig, Scope } from '../config/types.ts';
import { ProtoError } from '../errors.ts';
import type { AdmissionMetrics, QuotaLimit } from '../metrics/admission.ts';
import { ANONYMOUS, apiKeyVerifier, challengeOf, type CredentialVerifier, type Presented, type Principal } from './credentials.ts';
import { scopeOf, type Operation } from './operations.ts';
import { QuotaPool } from './quota.ts';

/** What the admission path is built from, once per configuration. */
export interface AdmissionOptions {
  config: Pick<GatewayConfig, 'auth' | 'sse' | 'mcp'>;
  metrics: AdmissionMetrics;
  /** Verifiers asked after the configured keys, in order (e.g. OAuth2 bearer JWTs). */
  verifiers?: CredentialVerifier[];
  /** The challenges of refusals when a verifier defines its own (OAuth2: RFC 6750 `Bearer`, RFC 9728 `resource_metadata`). */
  challenges?: Challenges;
}

/** `WWW-Authenticate` (and other) headers of a 401 without valid credentials and of a 403 for a missing scope. */
export interface Challenges {
  unauthenticated(): Record<string, string>;
  insufficientScope(scope: Scope): Record<string, string>;
}

/** Seconds a caller refused by the full stream pool is asked to wait (streams last; a slot frees when one ends). */
const STREAMS_RETRY_SECONDS = '5';

/** Resolves callers, checks scopes, and holds the shared quota pools. */
export class Admission {
  /**
   * Open streams of every push transport: SSE, gRPC `Subscribe`, MCP session streams and A2A
   * streaming calls share one pool, bounded by `sse.maxConnections` and
   * `sse.maxConnectionsPerPrincipal`: a full pool is overload (503 `STREAMS_EXHAUSTED` with
   * `Retry-After`), one caller over its share is 429 `TOO_MANY_STREAMS`.
   */
  readonly streams: QuotaPool;
  readonly metrics: AdmissionMetrics;
  #auth: AuthConfig;
  #verifiers: CredentialVerifier[];
  #challenge: Record<string, string>;
  #challenges: Challenges | undefined;

  constructor(options: AdmissionOptions) {
    const { auth, sse } = options.config;
    this.#auth = auth;
    this.#verifiers = [apiKeyVerifier(auth), ...(options.verifiers ?? [])];
    this.#challenge = challengeOf(auth);
    this.#challenges = options.challenges;
    this.metrics = options.metrics;
    this.streams = new QuotaPool({
      name: 'streams',
      max: sse.maxConnections,
      maxPerPrincipal: sse.maxConnectionsPerPrincipal,
      keys: { max: 'maxConnections', maxPerPrincipal: 'maxConnectionsPerPrincipal' },
      codes: { global: 'STREAMS_EXHAUSTED', principal: 'TOO_MANY_STREAMS' },
      noun: 'streams',
      globalHeaders: { 'Retry-After': STREAMS_RETRY_SECONDS },
    }, options.metrics);
  }

  /**
   * Takes a new configuration generation (a reload) in one step: the keys and their scopes, the
   * verifiers after them (`verifiers`/`challenges`: a new OAuth2 identity; left as they are when
   * undefined), the stream pool's bounds. The streams of every key that was removed or changed (its
   * secret or its scopes) are ended; when `auth.type` changes, every key's and the anonymous
   * caller's are; with `endTokenStreams` (the `auth.oauth2` settings changed), every caller's that
   * came with a token; a new key's id ends a token caller's of that id (a token may not claim it).
   * Returns the principal ids whose streams were ended.
   */
  reconfigure(options: Omit<AdmissionOptions, 'metrics'> & { endTokenStreams?: boolean }): string[] {
    const { auth, sse } = options.config;
    const before = this.#auth;
    if (options.verifiers !== undefined) this.#verifiers = [apiKeyVerifier(auth), ...options.verifiers];
    else this.#verifiers = [apiKeyVerifier(auth), ...this.#verifiers.slice(1)];
    if (options.challenges !== undefined || options.verifiers !== undefined) this.#challenges = options.challenges;
    this.#auth = auth;
    this.#challenge = challengeOf(auth);
    this.streams.resize(sse.maxConnections, sse.maxConnectionsPerPrincipal);
    const revoked = revokedPrincipals(before, auth);
    const known = new Set(before.keys.map((key) => key.id));
    for (const key of auth.keys) if (!known.has(key.id) && this.streams.heldBy(key.id) > 0) revoked.push(key.id);
    for (const id of revoked) this.streams.revoke(id);
    if (options.endTokenStreams) for (const id of this.streams.revokeTokens()) if (!revoked.includes(id)) revoked.push(id);
    return revoked;
  }

  /** Authenticates the caller and checks that it may perform `operation` (401, then 403). */
  async admit(operation: Operation, presented: Presented): Promise<Principal> {
    const principal = await this.authenticate(presented);
    this.authorize(principal, operation);
    return principal;
  }

  /** The caller of `presented`: the first verifier that recognises a credential decides; none = 401. */
  async authenticate(presented: Presented): Promise<Principal> {
    if (this.#auth.type === 'none') return ANONYMOUS;
    for (const verify of this.#verifiers) {
      const principal = await verify(presented);
      if (principal) return principal;
    }
    // No verifier took what was presented: an unknown bearer token, or nothing at all.
    const message = presented.headers.authorization === undefined ? 'credentials are required' : 'the credentials are not valid';
    throw new ProtoError('UNAUTHENTICATED', message, undefined, this.#challenges?.unauthenticated() ?? this.#challenge);
  }

  /** Throws 403 `FORBIDDEN` unless `principal` holds the scope `operation` needs. */
  authorize(principal: Principal, operation: Operation): void {
    const scope = scopeOf(operation);
    if (!principal.scopes.has(scope)) {
      throw new ProtoError('FORBIDDEN', `this operation needs the "${scope}" scope`, { scope }, this.#challenges?.insufficientScope(scope));
    }
  }

  /** Counts a refusal by a quota kept elsewhere (a store's count: A2A tasks, push configs). */
  refused(quota: string, limit: QuotaLimit): void {
    this.metrics.refused(quota, limit);
  }
}

/** The principals a change of `auth` takes credentials from (see `Admission.reconfigure`). */
export function revokedPrincipals(before: AuthConfig, after: AuthConfig): string[] {
  if (before.type !== after.type) return [ANONYMOUS.id, ...before.keys.map((key) => key.id)];
  const now = new Map(after.keys.map((key) => [key.id, key]));
  return before.keys
    .filter((key) => {
      const next = now.get(key.id);
      return !next || next.key !== key.key || [...key.scopes].sort().join() !== [...next.scopes].sort().join();
    })
    .map((key) => key.id);
}

/** Presented credentials of gRPC call metadata (string values only; binary `-bin` entries carry none). */
export function presentedOfMetadata(map: Record<string, unknown>): Presented {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(map)) if (typeof value === 'string') headers[name] = value;
  return { headers };
}
