/**
 * RFC 7662 token introspection, for opaque (non-JWT) access tokens: the gateway POSTs the token to
 * the provider's introspection endpoint, authenticated as its own client (HTTP Basic, RFC 6749
 * §2.3.1), and keeps the answer until the token's `exp` (at most `MAX_CACHE_MS`), so one token
 * costs one round trip. An inactive answer is kept `INACTIVE_CACHE_MS`. The cache is keyed by a
 * SHA-256 digest of the token (tokens are never held as keys) and bounded to `MAX_ENTRIES`
 * (oldest entry dropped first).
 */
import { createHash } from 'node:crypto';
import { postIdpForm } from './idp-http.ts';

/** Entries kept at most. */
export const MAX_ENTRIES = 10_000;
/** An active answer is kept until `exp`, and never longer than this (ms): revocation is seen within it. */
export const MAX_CACHE_MS = 5 * 60_000;
/** An inactive answer is kept this long (ms): a replayed bad token does not reach the provider each time. */
export const INACTIVE_CACHE_MS = 30_000;

/** What the provider said of a token: its claims when active, undefined when not. */
export type Introspected = Record<string, unknown> | undefined;

/** Introspects tokens at one endpoint, caching as the module comment says. */
export class Introspection {
  readonly #endpoint: () => Promise<string>;
  readonly #authorization: string;
  readonly #cache = new Map<string, { answer: Introspected; until: number }>();

  constructor(endpoint: () => Promise<string>, clientId: string, clientSecret = '') {
    this.#endpoint = endpoint;
    const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
    this.#authorization = `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
  }

  /** The claims of an active token, or undefined; throws `IdpUnavailable` when the provider cannot answer. */
  async introspect(token: string): Promise<Introspected> {
    const key = createHash('sha256').update(token).digest('base64url');
    const now = Date.now();
    const cached = this.#cache.get(key);
    if (cached && cached.until > now) return cached.answer;
    const body = await postIdpForm(await this.#endpoint(), { token, token_type_hint: 'access_token' }, { authorization: this.#authorization });
    const answer = body.active === true ? body : undefined;
    const exp = typeof answer?.exp === 'number' ? answer.exp * 1000 : Number.POSITIVE_INFINITY;
    this.#remember(key, answer, answer ? Math.min(exp, now + MAX_CACHE_MS) : now + INACTIVE_CACHE_MS);
    return answer;
  }

  #remember(key: string, answer: Introspected, until: number): void {
    this.#cache.delete(key);
    if (this.#cache.size >= MAX_ENTRIES) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(key, { answer, until });
  }
}
