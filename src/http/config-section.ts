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
import type { Reporter } from '../config/yaml-source.ts';
import { checkOAuth2, oauth2Defaults } from '../edge/oauth2/oauth2-config.ts';

/** `server:`: the listener (host 127.0.0.1, port 8080, body limit 1mb, JSON depth 64, shutdown 10s). */
export const serverSection: ConfigSection<'server'> = {
  key: 'server',
  check: (config, report) => checkPublicUrl(asText(asMap(config.server).publicUrl), report),
  defaults(value): ServerConfig {
    const raw = asMap(value);
    const config: ServerConfig = {
      host: text(raw.host, '127.0.0.1'),
      port: num(raw.port, 8080),
      bodyLimitBytes: bytes(raw.bodyLimit, '1mb'),
      maxJsonDepth: num(raw.maxJsonDepth, 64),
      shutdownTimeoutMs: ms(raw.shutdownTimeout, '10s'),
      cors: { origins: strings(asMap(raw.cors).origins) },
    };
    if (typeof raw.publicUrl === 'string') config.publicUrl = canonicalBaseUrl(raw.publicUrl);
    return config;
  },
};

/** `auth:`: none by default; apiKey or bearer with `keys`; oauth2 with `oauth2` (keys optional beside it). */
export const authSection: ConfigSection<'auth'> = {
  key: 'auth',
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

/** The public URL is a base: no query, no fragment, no credentials. */
function checkPublicUrl(publicUrl: string | undefined, report: Reporter): void {
  if (!publicUrl || !URL.canParse(publicUrl)) return;
  const url = new URL(publicUrl);
  const path: ConfigPath = ['server', 'publicUrl'];
  if (url.search || url.hash) report(path, 'must not have a query or a fragment');
  if (url.username || url.password) report(path, 'must not carry credentials');
}
