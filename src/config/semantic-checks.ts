/**
 * Checks a JSON Schema cannot express: uniqueness across backends, credentials that exist when
 * authentication is on, CIDR syntax, URL shape and the naming convention of command types. They run
 * beside the schema check on the raw data, so they guard every access.
 */
import ipaddr from 'ipaddr.js';
import { decodeSecretKey } from '../bridges/webhooks/secret-box.ts';
import { GATEWAY_ROUTE_ROOTS } from '../http/route-roots.ts';
import { kebab, pascal } from '../mapping/names.ts';
import type { ConfigPath } from './problems.ts';
import { isWildcardAddress } from './wildcard-address.ts';
import { asList, asMap, asText, entries, legacyBackends, type RawMap } from './raw.ts';
import type { Reporter } from './yaml-source.ts';

/** Runs every semantic check on the parsed config. */
export function checkSemantics(config: RawMap, report: Reporter): void {
  checkAuth(asMap(config.auth), report);
  checkPublicUrl(asText(asMap(config.server).publicUrl), report);
  checkWildcardHost(asMap(config.server), report);
  checkPageSize(asMap(asMap(config.events).pageSize), report);
  checkNetworks(asMap(config.webhooks).allowPrivateNetworks, ['webhooks', 'allowPrivateNetworks'], report);
  checkNetworks(asMap(config.registry).allowNetworks, ['registry', 'allowNetworks'], report);
  checkSecretKeys(asMap(config.webhooks), report);
  checkBackendIdentity(config, report);
  checkCommandTypes(config, report);
  checkQueryNames(config, report);
  checkConsolePath(asText(asMap(config.console).path), report);
}

/** The console's path leaves the gateway's own routes alone. */
function checkConsolePath(path: string | undefined, report: Reporter): void {
  const root = path?.split('/')[1];
  if (root !== undefined && GATEWAY_ROUTE_ROOTS.has(root)) {
    report(['console', 'path'], `/${root} is the gateway's own route; choose another path (e.g. /console)`);
  }
}

/** apiKey and bearer need at least one key; ids and keys are unique (a key names one principal). */
function checkAuth(auth: RawMap, report: Reporter): void {
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

function checkPageSize(pageSize: RawMap, report: Reporter): void {
  if (typeof pageSize.default === 'number' && typeof pageSize.max === 'number' && pageSize.default > pageSize.max) {
    report(['events', 'pageSize', 'default'], `must not exceed events.pageSize.max (${pageSize.max})`);
  }
}

function checkNetworks(list: unknown, path: ConfigPath, report: Reporter): void {
  asList(list).forEach((cidr, index) => {
    if (typeof cidr === 'string' && !ipaddr.isValidCIDR(cidr)) report([...path, index], `"${cidr}" is not a CIDR block (e.g. 10.0.0.0/8)`);
  });
}

/** `webhooks.secretKey` and each previous key are 32 bytes in base64 (AES-256). */
function checkSecretKeys(webhooks: RawMap, report: Reporter): void {
  const check = (value: unknown, path: ConfigPath) => {
    if (typeof value !== 'string') return;
    try {
      decodeSecretKey(value);
    } catch (err) {
      report(path, (err as Error).message);
    }
  };
  check(webhooks.secretKey, ['webhooks', 'secretKey']);
  asList(webhooks.previousSecretKeys).forEach((key, index) => check(key, ['webhooks', 'previousSecretKeys', index]));
}

/** Backend ids and service keys are unique: they name `/services/{id}` and manifest entries. */
function checkBackendIdentity(config: RawMap, report: Reporter): void {
  const ids = firstSeen(report);
  const services = firstSeen(report);
  for (const [index, backend] of entries(config.backends)) {
    const id = asText(backend.id);
    ids(id, ['backends', index, 'id'], (first) => `duplicate backend id "${id}", also backends[${first}]`, index);
    const service = asText(backend.service) ?? id;
    const at: ConfigPath = ['backends', index, backend.service === undefined ? 'id' : 'service'];
    services(service, at, (first) => `duplicate service key "${service}", also backends[${first}]`, index);
  }
}

/** A command type is routed to one backend only, and is `$pascal` of its catalogue schema. */
function checkCommandTypes(config: RawMap, report: Reporter): void {
  const types = firstSeen(report);
  for (const [b, backend] of legacyBackends(config)) {
    for (const [c, command] of entries(backend.commands)) {
      const type = asText(command.type);
      if (!type) continue;
      const path: ConfigPath = ['backends', b, 'commands', c];
      types(type, [...path, 'type'], (first) => `command type ${type} is already declared at ${first}`, `backends[${b}].commands[${c}]`);
      const schema = asText(command.schema) ?? kebab(type);
      if (pascal(schema) !== type) {
        report([...path, command.schema === undefined ? 'type' : 'schema'], `command type ${type} is not $pascal of its schema "${schema}" (${pascal(schema)})`);
      }
    }
  }
}

/** A query `schema`/`version` pair names one query across the gateway (`/queries/{schema}/{version}`). */
function checkQueryNames(config: RawMap, report: Reporter): void {
  const names = firstSeen(report);
  for (const [b, backend] of legacyBackends(config)) {
    for (const [q, query] of entries(backend.queries)) {
      const schema = asText(query.schema);
      if (!schema) continue;
      const name = `${schema}/${asText(query.version) ?? '1.0'}`;
      names(name, ['backends', b, 'queries', q, 'schema'], (first) => `query ${name} is already declared at ${first}`, `backends[${b}].queries[${q}]`);
    }
  }
}

/**
 * A uniqueness tracker: `seen(value, path, message, label)` reports `message(firstLabel)` at `path`
 * when `value` was seen before; undefined values are ignored.
 */
function firstSeen(report: Reporter) {
  const first = new Map<string, string | number>();
  return (value: string | undefined, path: ConfigPath, message: (first: string | number) => string, label: string | number) => {
    if (value === undefined) return;
    const earlier = first.get(value);
    if (earlier === undefined) first.set(value, label);
    else report(path, message(earlier));
  };
}
