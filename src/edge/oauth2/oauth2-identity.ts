/**
 * Identity from the operator's identity provider (`auth.type: oauth2`): bearer tokens verified
 * and mapped to the gateway's principals, as one more credential verifier of the admission path
 * (`edge/admission.ts`), after the configured keys.
 *
 * A JWT (RFC 7519) is verified with `jose` against the provider's keys (`jwks-cache.ts`) or the
 * configured HMAC secret: signature, algorithm (never `none`; HS* only with `sharedSecret`, so a
 * public key can never serve as an HMAC secret), `iss`, `aud`, `exp`/`nbf` within the clock
 * tolerance. Any other token goes to RFC 7662 introspection when `introspectionUrl` (or the
 * discovered endpoint with `clientId`) is configured. A refusal is a 401 `UNAUTHENTICATED` whose
 * `WWW-Authenticate` names the cause (RFC 6750 §3.1); the token itself never reaches a log or a
 * message.
 */
import { errors, jwtVerify, type FlattenedJWSInput, type JWSHeaderParameters } from 'jose';
import type { Logger } from 'pino';
import type { OAuth2Config, Scope } from '../../config/types.ts';
import { ProtoError } from '../../errors.ts';
import type { CredentialVerifier, Presented, Principal } from '../credentials.ts';
import { bearerChallenge } from './bearer-challenge.ts';
import { claimAt, claimMapper, type MappedClaims } from './claim-mapping.ts';
import { IdpUnavailable } from './idp-http.ts';
import { Introspection, MAX_CACHE_MS } from './introspection.ts';
import { JwksCache } from './jwks-cache.ts';
import { HMAC_ALGORITHMS } from './oauth2-config.ts';
import { ProviderMetadata } from './provider-metadata.ts';

/** Why a token was refused: `details.reason` of the 401, and the start of its description. */
export type TokenRefusal =
  | 'expired' | 'not_yet_valid' | 'audience' | 'issuer' | 'signature' | 'unknown_key' | 'algorithm'
  | 'malformed' | 'claims' | 'inactive' | 'no_principal' | 'principal_reserved';

const DESCRIPTIONS: Record<TokenRefusal, string> = {
  expired: 'the token has expired',
  not_yet_valid: 'the token is not valid yet (nbf)',
  audience: 'the token is for another audience (aud)',
  issuer: 'the token is from another issuer (iss)',
  signature: 'the token signature does not verify',
  unknown_key: 'the token is signed with an unknown key (kid)',
  algorithm: 'the token signing algorithm is not accepted',
  malformed: 'the token is malformed',
  claims: 'a claim of the token is not valid',
  inactive: 'the token is not active (introspection)',
  no_principal: 'the token has no principal claim',
  principal_reserved: 'the token principal is the id of a configured key',
};

/** What the identity needs besides its config section. */
export interface OAuth2IdentityOptions {
  config: OAuth2Config;
  /** The gateway's public base URL (known once it listens when not configured). */
  publicUrl: () => string;
  /** Ids of the configured keys: a token may not claim one (it would share that key's subscriptions, quotas, idempotency). */
  keyIds: string[];
  logger?: Logger;
}

/** Tokens of verified principals, for `forwardIdentity: token`; kept off the principal so that logging one never logs its token. */
const verifiedTokens = new WeakMap<Principal, string>();

/** The verified bearer token a principal presented, if it came with one. */
export function tokenOf(principal: Principal): string | undefined {
  return verifiedTokens.get(principal);
}

/** The provider-backed identity of one configuration. */
export class OAuth2Identity {
  readonly provider: ProviderMetadata;
  readonly #config: OAuth2Config;
  readonly #options: OAuth2IdentityOptions;
  readonly #jwks: JwksCache;
  readonly #introspection: Introspection | undefined;
  readonly #map: (claims: Record<string, unknown>) => MappedClaims;
  readonly #secret: Uint8Array | undefined;
  readonly #keyIds: Set<string>;

  constructor(options: OAuth2IdentityOptions) {
    const config = options.config;
    this.#config = config;
    this.#options = options;
    this.provider = new ProviderMetadata(config, options.logger);
    this.#jwks = new JwksCache({ url: () => this.provider.jwksUri(), maxAgeMs: config.jwksCacheMaxAgeMs, cooldownMs: config.jwksCooldownMs, logger: options.logger });
    this.#map = claimMapper(config);
    this.#secret = config.sharedSecret ? new TextEncoder().encode(config.sharedSecret) : undefined;
    this.#keyIds = new Set(options.keyIds);
    if (config.clientId && (config.introspectionUrl || config.issuer)) {
      this.#introspection = new Introspection(() => this.#introspectionEndpoint(), config.clientId, config.clientSecret);
    }
  }

  /**
   * Reads the provider's metadata and keys at boot, so the first token waits for nothing and the
   * manifest names the token endpoint. Never fails the start: a provider that is down is
   * retried on use (its tokens are refused, 503, until it answers).
   */
  async start(): Promise<void> {
    try {
      await this.provider.endpoints();
      if (this.provider.known.jwksUri) await this.#jwks.warm();
    } catch {
      // Logged by the provider metadata; retried on the next token.
    }
  }

  /** Nothing to release (no timers, no open connections of its own). */
  close(): void {}

  /** The URL of the RFC 9728 protected-resource metadata. */
  get resourceMetadataUrl(): string {
    return `${this.#options.publicUrl()}.well-known/oauth-protected-resource`;
  }

  /** The admission path's verifier: a bearer token (or the configured query parameter) → principal; no token → undefined. */
  readonly verifier: CredentialVerifier = async (presented) => {
    const token = presentedToken(presented, this.#config.queryParam);
    if (token === undefined) return undefined;
    const jwt = looksLikeJwt(token);
    const principal = this.#principal(jwt ? await this.#verifyJwt(token) : await this.#introspect(token));
    // An opaque token may be revoked at the provider before its `exp`: a stream it opens is asked
    // to come back (and be introspected again) within the introspection cache's lifetime.
    if (!jwt) principal.tokenExpiresAtMs = Math.min(principal.tokenExpiresAtMs!, Date.now() + MAX_CACHE_MS);
    verifiedTokens.set(principal, token);
    return principal;
  };

  /** `WWW-Authenticate` of a 401 without a (valid) token: where to learn how to get one. */
  unauthenticated(): Record<string, string> {
    return { 'WWW-Authenticate': bearerChallenge({ resourceMetadata: this.resourceMetadataUrl }) };
  }

  /** `WWW-Authenticate` of a 403 for a missing scope (RFC 6750 §3.1 insufficient_scope). */
  insufficientScope(scope: Scope): Record<string, string> {
    return { 'WWW-Authenticate': bearerChallenge({ error: 'insufficient_scope', scope, resourceMetadata: this.resourceMetadataUrl }) };
  }

  async #verifyJwt(token: string): Promise<Record<string, unknown>> {
    const { issuer, audience, algorithms, clockToleranceMs } = this.#config;
    try {
      const { payload } = await jwtVerify(token, this.#keyOf, {
        algorithms,
        issuer,
        audience: audience.length > 0 ? audience : undefined,
        clockTolerance: Math.round(clockToleranceMs / 1000),
      });
      return payload as Record<string, unknown>;
    } catch (err) {
      throw this.#refusalOf(err);
    }
  }

  /** HMAC algorithms get the shared secret (and only them); every other algorithm a key of the provider. */
  readonly #keyOf = (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    if (HMAC_ALGORITHMS.includes(header.alg ?? '')) {
      if (!this.#secret) throw new errors.JOSEAlgNotAllowed('HMAC tokens need auth.oauth2.sharedSecret');
      return this.#secret;
    }
    return this.#jwks.resolve(header, token);
  };

  async #introspect(token: string): Promise<Record<string, unknown>> {
    if (!this.#introspection) throw this.#refusal('malformed');
    let claims: Record<string, unknown> | undefined;
    try {
      claims = await this.#introspection.introspect(token);
    } catch (err) {
      throw this.#unavailable(err);
    }
    if (!claims) throw this.#refusal('inactive');
    // RFC 7662 §4: the resource server checks what it relies on (exp, iss, aud) itself.
    const now = Date.now() / 1000;
    const tolerance = this.#config.clockToleranceMs / 1000;
    if (typeof claims.exp === 'number' && claims.exp + tolerance < now) throw this.#refusal('expired');
    if (this.#config.issuer && claims.iss !== undefined && claims.iss !== this.#config.issuer) throw this.#refusal('issuer');
    if (this.#config.audience.length > 0 && !audiences(claims.aud).some((aud) => this.#config.audience.includes(aud))) throw this.#refusal('audience');
    return claims;
  }

  #principal(claims: Record<string, unknown>): Principal {
    const mapped = this.#map(claims);
    // RFC 9068 §2.2 / RFC 7662: a client-credentials token may name its client only.
    const id = mapped.principal ?? (this.#config.principalClaim === 'sub' ? stringClaim(claimAt(claims, 'client_id')) : undefined);
    if (!id) throw this.#refusal('no_principal');
    if (this.#keyIds.has(id)) throw this.#refusal('principal_reserved');
    const exp = claims.exp;
    const tokenExpiresAtMs = typeof exp === 'number' ? exp * 1000 + this.#config.clockToleranceMs : Infinity;
    return { id, scopes: mapped.scopes, grants: mapped.grants, tokenExpiresAtMs };
  }

  #refusalOf(err: unknown): ProtoError {
    if (err instanceof IdpUnavailable) return this.#unavailable(err);
    if (err instanceof errors.JWTExpired) return this.#refusal('expired');
    if (err instanceof errors.JWTClaimValidationFailed) {
      if (err.claim === 'aud') return this.#refusal('audience');
      if (err.claim === 'iss') return this.#refusal('issuer');
      if (err.claim === 'nbf') return this.#refusal('not_yet_valid');
      return this.#refusal('claims');
    }
    if (err instanceof errors.JWSSignatureVerificationFailed || err instanceof errors.JWKSMultipleMatchingKeys) return this.#refusal('signature');
    if (err instanceof errors.JWKSNoMatchingKey) return this.#refusal('unknown_key');
    if (err instanceof errors.JOSEAlgNotAllowed) return this.#refusal('algorithm');
    if (err instanceof errors.JOSEError || err instanceof TypeError) return this.#refusal('malformed');
    return this.#unavailable(err);
  }

  #refusal(reason: TokenRefusal): ProtoError {
    const description = DESCRIPTIONS[reason];
    const challenge = bearerChallenge({ error: 'invalid_token', description, resourceMetadata: this.resourceMetadataUrl });
    return new ProtoError('UNAUTHENTICATED', `the bearer token is not valid: ${description}`, { reason }, { 'WWW-Authenticate': challenge });
  }

  #unavailable(err: unknown): ProtoError {
    this.#options.logger?.warn({ err: (err as Error)?.message }, 'oauth2: a token could not be checked: the identity provider is unavailable');
    return new ProtoError('IDENTITY_PROVIDER_UNAVAILABLE', 'the identity provider cannot be reached to check the token; try again later', undefined, { 'Retry-After': '5' });
  }

  async #introspectionEndpoint(): Promise<string> {
    const { introspectionEndpoint } = await this.provider.endpoints();
    if (!introspectionEndpoint) throw new IdpUnavailable(this.#config.issuer ?? 'introspection', 'the provider names no introspection_endpoint');
    return introspectionEndpoint;
  }
}

/** The bearer token of `Authorization` (RFC 6750 §2.1), else of the configured query parameter (§2.3). */
function presentedToken(presented: Presented, queryParam: string | undefined): string | undefined {
  const header = presented.headers.authorization;
  const value = Array.isArray(header) ? header[0] : header;
  const match = value ? /^Bearer\s+(\S+)\s*$/i.exec(value) : null;
  if (match) return match[1];
  const fromQuery = queryParam ? presented.query?.get(queryParam) : undefined;
  return fromQuery || undefined;
}

/** A JWS compact serialisation: three base64url parts (RFC 7515 §7.1). */
function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/.test(token);
}

function audiences(aud: unknown): string[] {
  if (typeof aud === 'string') return [aud];
  return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : [];
}

function stringClaim(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
