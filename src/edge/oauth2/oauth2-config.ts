/**
 * `auth.oauth2`: defaults and the checks a JSON Schema cannot express. The `auth` section
 * (`http/config-section.ts`) calls these when `auth.type` is `oauth2`.
 */
import { ms, strings, text } from '../../config/defaults.ts';
import { asMap, type RawMap } from '../../config/raw.ts';
import type { OAuth2Config, Scope } from '../../config/types.ts';
import type { JsonSchema } from '../../config/section.ts';
import type { Reporter } from '../../config/yaml-source.ts';

/** Accepted JWS algorithms when none are configured: the asymmetric ones (RFC 7518 §3.1, RFC 8037). */
export const DEFAULT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];

/** HMAC algorithms: accepted only with `auth.oauth2.sharedSecret` (else a public key would be usable as an HMAC secret). */
export const HMAC_ALGORITHMS = ['HS256', 'HS384', 'HS512'];

/** The JSON Schema of `auth.oauth2` (a piece of the `auth` section's). */
export const OAUTH2_SCHEMA: JsonSchema = {
  "type": "object",
  "additionalProperties": false,
  "description": "Bearer tokens (JWTs, or opaque tokens through introspection) issued by the operator's identity provider. Read when auth.type is oauth2; needs issuer, jwksUrl or introspectionUrl.",
  "properties": {
    "issuer": {
      "type": "string",
      "minLength": 1,
      "description": "The iss every token must carry; OIDC discovery ({issuer}/.well-known/openid-configuration) finds jwks_uri, token_endpoint and introspection_endpoint from it.",
      "format": "uri"
    },
    "jwksUrl": {
      "type": "string",
      "minLength": 1,
      "description": "The provider's JWKS. Default: jwks_uri from discovery.",
      "format": "uri"
    },
    "audience": {
      "description": "Accepted aud value(s): a token must name one. Absent: the audience is not checked (not recommended).",
      "oneOf": [
        {
          "type": "string",
          "minLength": 1
        },
        {
          "type": "array",
          "items": {
            "type": "string",
            "minLength": 1
          },
          "minItems": 1
        }
      ]
    },
    "algorithms": {
      "type": "array",
      "items": {
        "type": "string",
        "enum": [
          "RS256",
          "RS384",
          "RS512",
          "PS256",
          "PS384",
          "PS512",
          "ES256",
          "ES384",
          "ES512",
          "EdDSA",
          "HS256",
          "HS384",
          "HS512"
        ]
      },
      "minItems": 1,
      "description": "Accepted JWS algorithms. Default the asymmetric ones (RS*, PS*, ES*, EdDSA); HS* only with sharedSecret; none never."
    },
    "sharedSecret": {
      "type": "string",
      "minLength": 1,
      "description": "HMAC secret for HS256/384/512 tokens. Absent: HMAC-signed tokens are refused."
    },
    "clockTolerance": {
      "$ref": "#/definitions/duration",
      "description": "Leeway on exp, nbf and iat. Default 30s.",
      "default": "30s"
    },
    "jwksCacheMaxAge": {
      "$ref": "#/definitions/duration",
      "description": "How long fetched keys are used before the JWKS is read again (kept if the re-read fails). Default 10m.",
      "default": "10m"
    },
    "jwksCooldown": {
      "$ref": "#/definitions/duration",
      "description": "At most one JWKS re-read per this interval for a token with an unknown kid. Default 30s.",
      "default": "30s"
    },
    "introspectionUrl": {
      "type": "string",
      "minLength": 1,
      "description": "RFC 7662 token introspection endpoint, for opaque (non-JWT) tokens; answers are cached until the token's exp. Default: none (only JWTs).",
      "format": "uri"
    },
    "clientId": {
      "type": "string",
      "minLength": 1,
      "description": "The gateway's client id at the introspection endpoint (HTTP Basic)."
    },
    "clientSecret": {
      "type": "string",
      "minLength": 1,
      "description": "The gateway's client secret at the introspection endpoint."
    },
    "tokenUrl": {
      "type": "string",
      "minLength": 1,
      "description": "Token endpoint advertised to callers (manifest, MCP block). Default: token_endpoint from discovery.",
      "format": "uri"
    },
    "principalClaim": {
      "type": "string",
      "minLength": 1,
      "description": "Claim naming the principal; a dotted path reaches a nested claim. Default sub.",
      "default": "sub"
    },
    "scopeClaim": {
      "type": "string",
      "minLength": 1,
      "description": "Claim holding the caller's scopes or roles: a space-separated string (scope) or an array (scp, realm_access.roles); dotted path for nested claims. Default scope.",
      "default": "scope"
    },
    "scopeMap": {
      "type": "object",
      "description": "Claim value -> gateway scopes it grants (read, write, admin). Absent: the values read, write and admin map to themselves.",
      "additionalProperties": {
        "type": "array",
        "items": {
          "type": "string",
          "enum": [
            "read",
            "write",
            "admin"
          ]
        }
      }
    },
    "queryParam": {
      "type": "string",
      "minLength": 1,
      "description": "Query parameter also carrying the token, for browser EventSource on GET /events/stream. Default: not accepted (tokens in URLs end up in logs)."
    }
  }
};

/** `auth.oauth2` with every default applied. */
export function oauth2Defaults(value: unknown): OAuth2Config {
  const raw = asMap(value);
  const sharedSecret = typeof raw.sharedSecret === 'string' ? raw.sharedSecret : undefined;
  const configured = strings(raw.algorithms);
  const config: OAuth2Config = {
    audience: typeof raw.audience === 'string' ? [raw.audience] : strings(raw.audience),
    algorithms: configured.length > 0 ? configured : sharedSecret ? [...DEFAULT_ALGORITHMS, ...HMAC_ALGORITHMS] : DEFAULT_ALGORITHMS,
    clockToleranceMs: ms(raw.clockTolerance, '30s'),
    jwksCacheMaxAgeMs: ms(raw.jwksCacheMaxAge, '10m'),
    jwksCooldownMs: ms(raw.jwksCooldown, '30s'),
    principalClaim: text(raw.principalClaim, 'sub'),
    scopeClaim: text(raw.scopeClaim, 'scope'),
  };
  for (const key of ['issuer', 'jwksUrl', 'introspectionUrl', 'clientId', 'clientSecret', 'tokenUrl', 'queryParam'] as const) {
    if (typeof raw[key] === 'string') config[key] = raw[key];
  }
  if (sharedSecret) config.sharedSecret = sharedSecret;
  if (raw.scopeMap !== undefined) {
    config.scopeMap = Object.fromEntries(Object.entries(asMap(raw.scopeMap)).map(([claim, scopes]) => [claim, strings(scopes) as Scope[]]));
  }
  return config;
}

/** `auth.type: oauth2` needs `auth.oauth2` with a way to find keys; HMAC needs its secret; `none` is never accepted. */
export function checkOAuth2(auth: RawMap, report: Reporter): void {
  if (auth.type !== 'oauth2') {
    if (auth.oauth2 !== undefined) report(['auth', 'oauth2'], 'auth.oauth2 is read only when auth.type is oauth2');
    return;
  }
  const oauth2 = asMap(auth.oauth2);
  if (auth.oauth2 === undefined) return report(['auth', 'type'], 'auth type oauth2 needs auth.oauth2 (issuer or jwksUrl)');
  if (typeof oauth2.issuer !== 'string' && typeof oauth2.jwksUrl !== 'string' && typeof oauth2.introspectionUrl !== 'string') {
    report(['auth', 'oauth2'], 'needs issuer (OIDC discovery), jwksUrl or introspectionUrl');
  }
  for (const [index, alg] of strings(oauth2.algorithms).entries()) {
    if (alg.toLowerCase() === 'none') report(['auth', 'oauth2', 'algorithms', index], 'alg "none" is never accepted (unsigned tokens)');
    if (HMAC_ALGORITHMS.includes(alg) && typeof oauth2.sharedSecret !== 'string') {
      report(['auth', 'oauth2', 'algorithms', index], `${alg} needs auth.oauth2.sharedSecret`);
    }
  }
  if (typeof oauth2.introspectionUrl === 'string' && typeof oauth2.clientId !== 'string') {
    report(['auth', 'oauth2', 'clientId'], 'introspectionUrl needs clientId (and clientSecret): the gateway authenticates to the endpoint');
  }
  for (const [claim, scopes] of Object.entries(asMap(oauth2.scopeMap))) {
    for (const scope of strings(scopes)) {
      if (!['read', 'write', 'admin'].includes(scope)) report(['auth', 'oauth2', 'scopeMap', claim], `unknown scope "${scope}" (read, write, admin)`);
    }
  }
}
