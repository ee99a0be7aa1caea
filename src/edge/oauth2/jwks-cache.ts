/**
 * The identity provider's signing keys (JWKS), fetched once and kept: a token whose `kid` is not
 * among them makes one re-read (at most one per `cooldownMs`, so a flood of forged `kid`s cannot
 * turn into a flood of requests to the provider), and keys older than `maxAgeMs` are re-read
 * before use. A failed re-read keeps the keys already held: when the provider is down, tokens
 * signed with known keys keep working and a new `kid` is refused as unknown (a 401, not a 500);
 * only while no key was ever read is a token unverifiable (`IdpUnavailable`, a 503).
 * Key rotation at the provider therefore needs no gateway restart.
 */
import { createLocalJWKSet, errors, type JSONWebKeySet, type JWSHeaderParameters, type FlattenedJWSInput } from 'jose';
import type { Logger } from 'pino';
import { getIdpJson, IdpUnavailable } from './idp-http.ts';

/** A key resolver for `jose.jwtVerify`. */
export type KeyResolver = ReturnType<typeof createLocalJWKSet>;

/** How the cache is bounded in time. */
export interface JwksCacheOptions {
  /** Where the JWKS is read (resolved lazily: discovery may be needed first). */
  url: () => Promise<string>;
  /** Keys are re-read when older than this (ms). */
  maxAgeMs: number;
  /** At most one re-read for an unknown `kid` per this interval (ms). */
  cooldownMs: number;
  logger?: Logger;
  /** Clock, for tests of expiry arithmetic (default `Date.now`). */
  now?: () => number;
}

/** The provider's keys, held and refreshed as the module comment says. */
export class JwksCache {
  readonly #options: JwksCacheOptions;
  readonly #now: () => number;
  #keys: KeyResolver | undefined;
  #fetchedAt = Number.NEGATIVE_INFINITY;
  #attemptedAt = Number.NEGATIVE_INFINITY;
  #reading: Promise<void> | undefined;

  constructor(options: JwksCacheOptions) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
  }

  /** The key of a token's protected header; throws jose's `JWKSNoMatchingKey` for an unknown `kid`. */
  readonly resolve = async (header: JWSHeaderParameters, token: FlattenedJWSInput) => {
    // Stale keys are re-read in the background while held (a provider that is down costs no
    // latency); with none held yet, the first read is awaited.
    if (!this.#keys) await this.#reread();
    else if (this.#now() - this.#fetchedAt > this.#options.maxAgeMs) void this.#reread();
    try {
      return await this.#lookup(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || !this.#mayReread()) throw err;
      await this.#reread();
      return this.#lookup(header, token);
    }
  };

  /** Reads the keys if none are held yet (at boot); a failure is logged and kept for the next token. */
  async warm(): Promise<void> {
    if (!this.#keys) await this.#reread();
  }

  #lookup(header: JWSHeaderParameters, token: FlattenedJWSInput) {
    // No key was ever read: the provider is unavailable (a 503), not the token bad (a 401).
    if (!this.#keys) throw new IdpUnavailable('JWKS', 'the provider\'s keys could not be read yet');
    return this.#keys(header, token);
  }

  #mayReread(): boolean {
    return this.#now() - this.#attemptedAt >= this.#options.cooldownMs;
  }

  /** One re-read at a time; a failure keeps the keys held (and is logged, never thrown). */
  #reread(): Promise<void> {
    if (this.#reading) return this.#reading;
    if (!this.#mayReread() && this.#keys) return Promise.resolve();
    this.#attemptedAt = this.#now();
    this.#reading = this.#read().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    try {
      const body = await getIdpJson(await this.#options.url());
      if (!Array.isArray(body.keys)) throw new Error('the JWKS has no "keys" array');
      this.#keys = createLocalJWKSet(body as unknown as JSONWebKeySet);
      this.#fetchedAt = this.#now();
    } catch (err) {
      this.#options.logger?.warn({ err: (err as Error).message }, 'oauth2: the JWKS could not be read; the keys held are kept');
    }
  }
}
