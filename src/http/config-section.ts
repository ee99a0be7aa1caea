/**
 * The `server:` and `auth:` sections of the configuration (the HTTP listener and how callers
 * authenticate): defaults and the checks a JSON Schema cannot express.
 */
import { bytes, canonicalBaseUrl, flag, ms, num, strings, text } from '../config/defaults.ts';
import type { ConfigPath } from '../config/problems.ts';
import { asList, asMap, asText, entries, type RawMap } from '../config/raw.ts';
import type { ConfigSection } from '../config/section.ts';
import { firstSeen } from '../config/semantic-checks.ts';
import type { AuthConfig, ServerConfig } from '../config/types.ts';
import { isWildcardAddress } from '../config/wildcard-address.ts';
import type { Reporter } from '../config/yaml-source.ts';
import { checkOAuth2, OAUTH2_SCHEMA, oauth2Defaults } from '../edge/oauth2/oauth2-config.ts';

/** `server:`: the listener (host 127.0.0.1, port 8080, body limit 1mb, JSON depth 64, shutdown 10s). */
export const serverSection: ConfigSection<'server'> = {
  key: 'server',
  schema: {
    "type": "object",
    "description": "The public HTTP listener.",
    "additionalProperties": false,
    "properties": {
      "host": {
        "type": "string",
        "description": "Listen address. Default 127.0.0.1.",
        "minLength": 1,
        "default": "127.0.0.1"
      },
      "port": {
        "type": "integer",
        "description": "Listen port; 0 = any free port (the \"listening\" log line says which). Default 8080.",
        "minimum": 0,
        "maximum": 65535,
        "default": 8080
      },
      "publicUrl": {
        "$ref": "#/definitions/httpUrl",
        "description": "Consumer-facing base URL; every advertised URL starts with it. Default http://{host}:{port}/. A path in it is only advertised (the listener serves at /)."
      },
      "bodyLimit": {
        "$ref": "#/definitions/size",
        "description": "Largest request body. Default 1mb.",
        "default": "1mb"
      },
      "maxJsonDepth": {
        "type": "integer",
        "description": "Deepest nesting of a JSON request body. Default 64.",
        "minimum": 1,
        "default": 64
      },
      "shutdownTimeout": {
        "$ref": "#/definitions/duration",
        "description": "Deadline for draining streams and flushing the outbox on shutdown. Default 10s.",
        "default": "10s"
      },
      "watchConfig": {
        "type": "boolean",
        "description": "Reload the configuration when its file changes (as on SIGHUP), including a Kubernetes ConfigMap's symlink swap. Default false.",
        "default": false
      },
      "logLevel": {
        "type": "string",
        "enum": [
          "fatal",
          "error",
          "warn",
          "info",
          "debug",
          "trace"
        ],
        "description": "Lowest level of the log lines written; a reload applies it at once. Default info.",
        "default": "info"
      },
      "cors": {
        "type": "object",
        "description": "Cross-origin requests from browsers (SSE, queries).",
        "additionalProperties": false,
        "properties": {
          "origins": {
            "type": "array",
            "description": "Browser origins allowed, e.g. https://app.example.com, or *. Default none.",
            "items": {
              "type": "string",
              "description": "An origin."
            },
            "default": []
          }
        }
      }
    }
  },
  check: (config, report) => {
    checkPublicUrl(asText(asMap(config.server).publicUrl), report);
    checkWildcardHost(asMap(config.server), report);
  },
  defaults(value): ServerConfig {
    const raw = asMap(value);
    const config: ServerConfig = {
      host: text(raw.host, '127.0.0.1'),
      port: num(raw.port, 8080),
      bodyLimitBytes: bytes(raw.bodyLimit, '1mb'),
      maxJsonDepth: num(raw.maxJsonDepth, 64),
      shutdownTimeoutMs: ms(raw.shutdownTimeout, '10s'),
      watchConfig: flag(raw.watchConfig, false),
      logLevel: text(raw.logLevel, 'info') as ServerConfig['logLevel'],
      cors: { origins: strings(asMap(raw.cors).origins) },
    };
    if (typeof raw.publicUrl === 'string') config.publicUrl = canonicalBaseUrl(raw.publicUrl);
    return config;
  },
};

/** `auth:`: none by default; apiKey or bearer with `keys`; oauth2 with `oauth2` (keys optional beside it). */
export const authSection: ConfigSection<'auth'> = {
  key: 'auth',
  schema: {
    "type": "object",
    "description": "Authentication of consumers.",
    "additionalProperties": false,
    "properties": {
      "type": {
        "type": "string",
        "enum": [
          "none",
          "apiKey",
          "bearer",
          "oauth2"
        ],
        "default": "none",
        "description": "none: public; apiKey: key in header (or Authorization: Bearer); bearer: Authorization: Bearer <key>; oauth2: bearer tokens of the operator's identity provider (auth.oauth2), the keys still accepted beside them. Default none."
      },
      "header": {
        "type": "string",
        "description": "Header carrying an API key. Default X-Api-Key.",
        "minLength": 1,
        "default": "X-Api-Key"
      },
      "queryParam": {
        "type": "string",
        "description": "Query parameter also carrying the key (for EventSource). Default: not accepted.",
        "minLength": 1
      },
      "oauth2": OAUTH2_SCHEMA,
      "keys": {
        "type": "array",
        "description": "Accepted keys, one per principal. Required (at least one) when type is apiKey or bearer; optional beside oauth2.",
        "default": [],
        "items": {
          "type": "object",
          "description": "A principal and its key.",
          "additionalProperties": false,
          "required": [
            "id",
            "key",
            "scopes"
          ],
          "properties": {
            "id": {
              "type": "string",
              "description": "Principal name.",
              "minLength": 1
            },
            "key": {
              "type": "string",
              "description": "The secret; use ${VAR} to take it from the environment.",
              "minLength": 1
            },
            "scopes": {
              "type": "array",
              "description": "Scopes of this key: read (every GET), write (commands, subscriptions), admin (service registry, pause/resume).",
              "uniqueItems": true,
              "items": {
                "type": "string",
                "enum": [
                  "read",
                  "write",
                  "admin"
                ],
                "description": "A scope."
              }
            }
          }
        }
      }
    }
  },
  check: (config, report) => checkAuth(asMap(config.auth), report),
  defaults(value): AuthConfig {
    const raw = asMap(value);
    const config: AuthConfig = {
      type: text(raw.type, 'none') as AuthConfig['type'],
      header: text(raw.header, 'X-Api-Key'),
      keys: asList(raw.keys).map((entry) => {
        const key = asMap(entry);
        return { id: String(key.id), key: String(key.key), scopes: strings(key.scopes) as AuthConfig['keys'][number]['scopes'] };
      }),
    };
    if (typeof raw.queryParam === 'string') config.queryParam = raw.queryParam;
    if (config.type === 'oauth2') config.oauth2 = oauth2Defaults(raw.oauth2);
    return config;
  },
};

/** apiKey and bearer need at least one key; ids and keys are unique (a key names one principal). */
function checkAuth(auth: RawMap, report: Reporter): void {
  checkOAuth2(auth, report);
  const keys = entries(auth.keys);
  if ((auth.type === 'apiKey' || auth.type === 'bearer') && keys.length === 0) {
    report(['auth', 'type'], `auth type ${auth.type} needs at least one entry in auth.keys`);
  }
  const ids = firstSeen(report);
  const secrets = firstSeen(report);
  for (const [index, key] of keys) {
    ids(asText(key.id), ['auth', 'keys', index, 'id'], (first) => `duplicate key id, also at auth.keys[${first}]`, index);
    secrets(asText(key.key), ['auth', 'keys', index, 'key'], (first) => `same key as auth.keys[${first}]`, index);
  }
}

/**
 * Every advertised URL starts with `server.publicUrl`, by default `http://{host}:{port}/`: bound to
 * a wildcard address (every interface) that default is a URL no consumer can follow, so the
 * public URL must then be set. (URLs are not built per request from `Host`: events keep public
 * URLs in the log, which must not depend on who asked.)
 */
function checkWildcardHost(server: RawMap, report: Reporter): void {
  const host = asText(server.host);
  if (host === undefined || !isWildcardAddress(host) || server.publicUrl !== undefined) return;
  report(['server', 'host'], `${host} binds every interface, so server.publicUrl must be set: every URL the gateway advertises (manifest, catalogues, agent card, MCP, gRPC .proto) starts with it, and http://${host.includes(':') ? `[${host}]` : host}:…/ is not one a consumer can follow; set it to the URL consumers reach the gateway at, e.g. https://gw.example.com/`);
}

/** The public URL is a base: no query, no fragment, no credentials. */
function checkPublicUrl(publicUrl: string | undefined, report: Reporter): void {
  if (!publicUrl || !URL.canParse(publicUrl)) return;
  const url = new URL(publicUrl);
  const path: ConfigPath = ['server', 'publicUrl'];
  if (url.search || url.hash) report(path, 'must not have a query or a fragment');
  if (url.username || url.password) report(path, 'must not carry credentials');
}
