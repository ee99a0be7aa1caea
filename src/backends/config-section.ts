/**
 * The `backends:` section: the configured services, legacy (commands, queries, records mapped by
 * JSONata) and protocol-speaking. Checks: ids and service keys unique, a command type routed to one
 * backend and named `$pascal` of its schema, query names unique, every mapping compiles.
 */
import { ms, num, optional, strings, text } from '../config/defaults.ts';
import { checkMappings } from '../config/mapping-check.ts';
import { formatPath, type ConfigPath } from '../config/problems.ts';
import { asList, asMap, asText, entries, legacyBackends, type RawMap } from '../config/raw.ts';
import type { ConfigSection, SectionContext } from '../config/section.ts';
import { firstSeen } from '../config/semantic-checks.ts';
import type {
  BackendConfig,
  ForwardIdentity,
  LegacyBackendConfig,
  LegacyCommandConfig,
  LegacyQueryConfig,
  ProtoBackendConfig,
  RecordsConfig,
} from '../config/types.ts';
import type { Reporter } from '../config/yaml-source.ts';
import { kebab, pascal } from '../mapping/names.ts';
import { backendsDefinitions, backendsSchema } from './config-schema.ts';

/** Catalogue version of a legacy command or query that names none. */
export const defaultCatalogueVersion = '1.0';

/** `backends:`. */
export const backendsSection: ConfigSection<'backends'> = {
  key: 'backends',
  schema: backendsSchema,
  definitions: backendsDefinitions,
  check(config, report) {
    checkBackendIdentity(config, report);
    checkCommandTypes(config, report);
    checkQueryNames(config, report);
    checkMappings(config, report);
  },
  defaults: (value, context) => asList(value).map((backend, index) => backendConfig(asMap(backend), index, context)),
};

function backendConfig(raw: RawMap, index: number, ctx: SectionContext): BackendConfig {
  const id = String(raw.id);
  const circuit = asMap(raw.circuit);
  const common = {
    id,
    url: String(raw.url).replace(/\/+$/, ''),
    service: text(raw.service, id),
    source: text(raw.source, `urn:proto-gateway:${id}`),
    circuit: { failures: num(circuit.failures, 5), cooldownMs: ms(circuit.cooldown, '30s') },
    headers: { ...(asMap(raw.headers) as Record<string, string>) },
    forwardIdentity: text(raw.forwardIdentity, 'none') as ForwardIdentity,
    ...(raw.access !== undefined && { access: strings(raw.access) }),
    ...optional(raw, ['description', 'version']),
  };
  if (raw.kind === 'proto') return protoBackend(raw, common);
  return legacyBackend(raw, common, ['backends', index], ctx);
}

type Common = Omit<ProtoBackendConfig, 'kind' | 'refreshMs' | 'events'>;

function protoBackend(raw: RawMap, common: Common): ProtoBackendConfig {
  const events = asMap(raw.events);
  return {
    ...common,
    kind: 'proto',
    refreshMs: ms(raw.refresh, '30s'),
    events: { follow: text(events.follow, 'poll') as 'poll' | 'stream', intervalMs: ms(events.interval, '1s') },
  };
}

function legacyBackend(raw: RawMap, common: Common, path: ConfigPath, ctx: SectionContext): LegacyBackendConfig {
  return {
    ...common,
    kind: 'legacy',
    correlationHeader: text(raw.correlationHeader, 'X-Request-Id'),
    commands: asList(raw.commands).map((c, i) => legacyCommand(asMap(c), [...path, 'commands', i], ctx)),
    queries: asList(raw.queries).map((q) => legacyQuery(asMap(q))),
    records: asList(raw.records).map((r, i) => records(asMap(r), [...path, 'records', i], ctx)),
  };
}

function legacyCommand(raw: RawMap, path: ConfigPath, ctx: SectionContext): LegacyCommandConfig {
  const type = String(raw.type);
  const request = asMap(raw.request);
  const events = asMap(raw.events);
  const fromFile = ctx.schemaFiles.get(formatPath([...path, 'schemaFile']));
  return {
    type,
    schema: text(raw.schema, kebab(type)),
    version: text(raw.version, defaultCatalogueVersion),
    ...optional(raw, ['description']),
    ...(raw.access !== undefined && { access: strings(raw.access) }),
    jsonSchema: fromFile?.schema ?? (raw.jsonSchema as Record<string, unknown>),
    request: { method: text(request.method, 'POST'), path: String(request.path), ...optional(request, ['body']) },
    events: {
      ...(events.success === undefined ? {} : { success: asMap(events.success) as { type: string; data?: string } }),
      ...(events.failure === undefined ? {} : { failure: asMap(events.failure) as { type: string } }),
    },
  };
}

function legacyQuery(raw: RawMap): LegacyQueryConfig {
  const request = asMap(raw.request);
  return {
    schema: String(raw.schema),
    version: text(raw.version, defaultCatalogueVersion),
    ...optional(raw, ['description', 'parameters', 'result']),
    ...(raw.access !== undefined && { access: strings(raw.access) }),
    response: (raw.response as Record<string, unknown> | undefined) ?? {},
    request: { method: text(request.method, 'GET'), path: String(request.path), ...optional(request, ['query']) },
  };
}

function records(raw: RawMap, path: ConfigPath, ctx: SectionContext): RecordsConfig {
  const fromFile = ctx.schemaFiles.get(formatPath([...path, 'schema']));
  const config: RecordsConfig = {
    path: String(raw.path),
    intervalMs: ms(raw.interval, '2s'),
    types: strings(raw.types),
    event: { ...(asMap(raw.event) as RecordsConfig['event']) },
    ...optional(raw, ['items']),
  };
  if (raw.cursor !== undefined) config.cursor = { ...(asMap(raw.cursor) as { param: string; field: string }) };
  if (fromFile) Object.assign(config, { schema: fromFile.schema, schemaFile: fromFile.file });
  return config;
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
