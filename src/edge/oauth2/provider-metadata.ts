/**
 * The identity provider's endpoints: configured ones win, the rest come from OpenID Connect
 * discovery (`{issuer}/.well-known/openid-configuration`, OIDC Discovery 1.0 §4) or, failing that,
 * OAuth 2.0 Authorization Server Metadata (RFC 8414 §3). Read once and kept; a failed read is
 * retried on the next use (at most once per `retryMs`), so a provider that starts after the
 * gateway is picked up without a restart.
 */
import type { Logger } from 'pino';
import type { OAuth2Config } from '../../config/types.ts';
import { getIdpJson, IdpUnavailable } from './idp-http.ts';

/** The endpoints the gateway uses or advertises. */
export interface ProviderEndpoints {
  jwksUri?: string;
  tokenEndpoint?: string;
  introspectionEndpoint?: string;
}

/** Minimum interval between two failed discovery attempts (ms). */
const RETRY_MS = 5_000;

/** Discovered endpoints of one provider. */
export class ProviderMetadata {
  readonly #config: OAuth2Config;
  readonly #logger?: Logger;
  #known: ProviderEndpoints | undefined;
  #reading: Promise<ProviderEndpoints> | undefined;
  #failedAt = Number.NEGATIVE_INFINITY;
  readonly #listeners: Array<() => void> = [];

  constructor(config: OAuth2Config, logger?: Logger) {
    this.#config = config;
    this.#logger = logger;
    const { jwksUrl, tokenUrl, introspectionUrl } = config;
    // Nothing to discover when everything is configured (or there is no issuer to ask).
    if (!config.issuer || (jwksUrl && tokenUrl)) this.#known = { jwksUri: jwksUrl, tokenEndpoint: tokenUrl, introspectionEndpoint: introspectionUrl };
  }

  /** The endpoints known so far, without waiting (what the manifest advertises). */
  get known(): ProviderEndpoints {
    return this.#known ?? { jwksUri: this.#config.jwksUrl, tokenEndpoint: this.#config.tokenUrl, introspectionEndpoint: this.#config.introspectionUrl };
  }

  /** The endpoints, discovering them first when needed; throws `IdpUnavailable` when discovery fails. */
  async endpoints(): Promise<ProviderEndpoints> {
    if (this.#known) return this.#known;
    if (Date.now() - this.#failedAt < RETRY_MS) throw new IdpUnavailable(this.#discoveryUrl(), 'discovery failed recently');
    this.#reading ??= this.#discover().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  /** Calls `listener` once discovery has found the endpoints (what is advertised changes then). */
  onDiscovered(listener: () => void): void {
    this.#listeners.push(listener);
  }

  /** The JWKS URL (configured or discovered). */
  async jwksUri(): Promise<string> {
    const { jwksUri } = await this.endpoints();
    if (!jwksUri) throw new IdpUnavailable(this.#discoveryUrl(), 'the provider names no jwks_uri');
    return jwksUri;
  }

  async #discover(): Promise<ProviderEndpoints> {
    try {
      const document = await this.#readDocument();
      if (document.issuer !== this.#config.issuer) throw new IdpUnavailable(this.#discoveryUrl(), 'the document names another issuer'); // OIDC Discovery §4.3
      this.#known = {
        jwksUri: this.#config.jwksUrl ?? stringOf(document.jwks_uri),
        tokenEndpoint: this.#config.tokenUrl ?? stringOf(document.token_endpoint),
        introspectionEndpoint: this.#config.introspectionUrl ?? stringOf(document.introspection_endpoint),
      };
      for (const listener of this.#listeners) listener();
      return this.#known;
    } catch (err) {
      this.#failedAt = Date.now();
      this.#logger?.warn({ err: (err as Error).message }, 'oauth2: discovery of the identity provider failed; retried on a later request');
      throw err;
    }
  }

  async #readDocument(): Promise<Record<string, unknown>> {
    try {
      return await getIdpJson(this.#discoveryUrl());
    } catch (err) {
      // RFC 8414 §3: /.well-known/oauth-authorization-server inserted before the issuer's path.
      const issuer = new URL(this.#config.issuer!);
      const path = issuer.pathname === '/' ? '' : issuer.pathname.replace(/\/$/, '');
      return getIdpJson(`${issuer.origin}/.well-known/oauth-authorization-server${path}`).catch(() => Promise.reject(err));
    }
  }

  #discoveryUrl(): string {
    return `${this.#config.issuer!.replace(/\/$/, '')}/.well-known/openid-configuration`;
  }
}

function stringOf(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
