/**
 * Turns a validated config into `GatewayConfig`, applying every default once (the values shown in
 * DESIGN.md's Configuration contract), parsing durations to milliseconds and sizes to bytes, and
 * resolving relative paths against the config file's directory. Input must have passed the schema
 * and the semantic checks; nothing here reports problems.
 */
import { dirname, resolve } from 'node:path';
import { kebab } from '../mapping/names.ts';
import type {
  AuthConfig,
  BackendConfig,
  CommandsConfig,
  GatewayConfig,
  LegacyBackendConfig,
  LegacyCommandConfig,
  LegacyQueryConfig,
  ProtoBackendConfig,
  RecordsConfig,
  ServerConfig,
  SseConfig,
  StorageConfig,
  WebhooksConfig,
} from './types.ts';
import { parseDuration, parseSize } from './duration.ts';
import { formatPath, type ConfigPath } from './problems.ts';
import type { SchemaFiles } from './embedded-schemas.ts';
import { asMap, asList, type RawMap } from './raw.ts';

/** Catalogue version of a legacy command or query that names none. */
export const defaultCatalogueVersion = '1.0';

/** What relative paths and schema files resolve against. */
interface Context {
  dir: string;
  schemaFiles: SchemaFiles;
}

/** The normalised config of `raw`, read from the absolute path `file`. */
export function applyDefaults(raw: RawMap, file: string, schemaFiles: SchemaFiles): GatewayConfig {
  const ctx: Context = { dir: dirname(file), schemaFiles };
  const config: GatewayConfig = {
    file,
    server: server(asMap(raw.server)),
    protocol: { version: text(asMap(raw.protocol).version, '1.0.0') },
    auth: auth(asMap(raw.auth)),
    storage: storage(asMap(raw.storage), ctx),
    metrics: { public: flag(asMap(raw.metrics).public, false) },
    events: events(asMap(raw.events)),
    commands: commands(asMap(raw.commands)),
    sse: sse(asMap(raw.sse)),
    webhooks: webhooks(asMap(raw.webhooks), ctx),
    registry: { allowNetworks: strings(asMap(raw.registry).allowNetworks) },
    a2a: a2a(asMap(raw.a2a)),
    mcp: mcp(asMap(raw.mcp)),
    console: { enabled: flag(asMap(raw.console).enabled, true), path: text(asMap(raw.console).path, '/console') },
    backends: asList(raw.backends).map((backend, index) => backendConfig(asMap(backend), index, ctx)),
  };
  if (raw.grpc !== undefined) config.grpc = grpc(asMap(raw.grpc));
  return config;
}

/** `https://gw.example.com/api//` → `https://gw.example.com/api/`: canonical, exactly one trailing `/`. */
export function canonicalBaseUrl(url: string): string {
  const parsed = new URL(url);
  parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}/`;
  return parsed.href;
}

function server(raw: RawMap): ServerConfig {
  const config: ServerConfig = {
    host: text(raw.host, '127.0.0.1'),
    port: num(raw.port, 8080),
    bodyLimitBytes: parseSize(text(raw.bodyLimit, '1mb')),
    maxJsonDepth: num(raw.maxJsonDepth, 64),
    shutdownTimeoutMs: ms(raw.shutdownTimeout, '10s'),
    cors: { origins: strings(asMap(raw.cors).origins) },
  };
  if (typeof raw.publicUrl === 'string') config.publicUrl = canonicalBaseUrl(raw.publicUrl);
  return config;
}

function auth(raw: RawMap): AuthConfig {
  const config: AuthConfig = {
    type: text(raw.type, 'none') as AuthConfig['type'],
    header: text(raw.header, 'X-Api-Key'),
    keys: asList(raw.keys).map((entry) => {
      const key = asMap(entry);
      return { id: String(key.id), key: String(key.key), scopes: strings(key.scopes) as AuthConfig['keys'][number]['scopes'] };
    }),
  };
  if (typeof raw.queryParam === 'string') config.queryParam = raw.queryParam;
  return config;
}

function storage(raw: RawMap, ctx: Context): StorageConfig {
  return {
    driver: text(raw.driver, 'sqlite') as StorageConfig['driver'],
    path: resolve(ctx.dir, text(raw.path, './data/gateway.db')),
    url: text(raw.url, 'redis://127.0.0.1:6379/0'),
    prefix: text(raw.prefix, 'pgw:'),
    redis: redisSettings(asMap(raw.redis)),
  };
}

function redisSettings(raw: RawMap): StorageConfig['redis'] {
  return {
    waitReplicas: num(raw.waitReplicas, 0),
    waitTimeoutMs: ms(raw.waitTimeout, '1s'),
    waitAof: flag(raw.waitAof, false),
    ...(Array.isArray(raw.sentinels) && { sentinels: raw.sentinels as Array<{ host: string; port: number }> }),
    ...(typeof raw.name === 'string' && { name: raw.name }),
  };
}

function events(raw: RawMap): GatewayConfig['events'] {
  const pageSize = asMap(raw.pageSize);
  const retention = asMap(raw.retention);
  return {
    pageSize: { default: num(pageSize.default, 100), max: num(pageSize.max, 1000) },
    retention: { maxEvents: num(retention.maxEvents, 10_000_000), maxAgeMs: ms(retention.maxAge, '30d') },
  };
}

function commands(raw: RawMap): CommandsConfig {
  const rateLimit = asMap(raw.rateLimit);
  const dispatch = asMap(raw.dispatch);
  return {
    idempotencyWindowMs: ms(raw.idempotencyWindow, '24h'),
    rateLimit: { perSecond: num(rateLimit.perSecond, 0), burst: num(rateLimit.burst, 0) },
    dispatch: {
      timeoutMs: ms(dispatch.timeout, '10s'),
      concurrency: num(dispatch.concurrency, 16),
      retry: { scheduleMs: schedule(asMap(dispatch.retry).schedule, ['1s', '5s', '30s', '2m', '10m', '30m', '1h']) },
    },
  };
}

function sse(raw: RawMap): SseConfig {
  return {
    keepaliveMs: ms(raw.keepalive, '15s'),
    maxBufferedBytes: parseSize(text(raw.maxBufferedBytes, '1mb')),
    maxConnections: num(raw.maxConnections, 10_000),
    maxConnectionsPerPrincipal: num(raw.maxConnectionsPerPrincipal, 1000),
    closeOnTerminal: flag(raw.closeOnTerminal, true),
  };
}

function webhooks(raw: RawMap, ctx: Context): WebhooksConfig {
  const config: WebhooksConfig = {
    allowPrivateNetworks: strings(raw.allowPrivateNetworks),
    allowHttp: flag(raw.allowHttp, false),
    retry: { scheduleMs: schedule(asMap(raw.retry).schedule, ['5s', '5m', '30m', '2h', '5h', '10h', '14h', '20h', '24h']) },
    timeoutMs: ms(raw.timeout, '15s'),
    concurrency: num(raw.concurrency, 64),
    previousSecretKeys: strings(raw.previousSecretKeys),
    maxSubscriptionsPerPrincipal: num(raw.maxSubscriptionsPerPrincipal, 100),
    maxSubscriptions: num(raw.maxSubscriptions, 10_000),
  };
  if (typeof raw.ca === 'string') config.ca = resolve(ctx.dir, raw.ca);
  if (typeof raw.secretKey === 'string') config.secretKey = raw.secretKey;
  return config;
}

function grpc(raw: RawMap): NonNullable<GatewayConfig['grpc']> {
  const config: NonNullable<GatewayConfig['grpc']> = { host: text(raw.host, '127.0.0.1'), port: num(raw.port, 9090) };
  if (typeof raw.publicEndpoint === 'string') config.publicEndpoint = raw.publicEndpoint;
  return config;
}

/** The agent card's description when `a2a.description` is absent. */
const DEFAULT_AGENT_DESCRIPTION = 'Sends commands to the services behind this gateway and reports the events they produce as task artifacts.';

function a2a(raw: RawMap): GatewayConfig['a2a'] {
  return {
    enabled: flag(raw.enabled, true),
    settleMs: ms(raw.settle, '2s'),
    timeoutMs: ms(raw.timeout, '60s'),
    name: typeof raw.name === 'string' ? raw.name : 'proto-gateway',
    description: typeof raw.description === 'string' ? raw.description : DEFAULT_AGENT_DESCRIPTION,
    maxTasks: num(raw.maxTasks, 10_000),
    taskTtlMs: ms(raw.taskTtl, '24h'),
  };
}

function mcp(raw: RawMap): GatewayConfig['mcp'] {
  return {
    enabled: flag(raw.enabled, true),
    maxSessions: num(raw.maxSessions, 1000),
    idleTimeoutMs: ms(raw.idleTimeout, '30m'),
    allowedHosts: strings(raw.allowedHosts),
  };
}

function backendConfig(raw: RawMap, index: number, ctx: Context): BackendConfig {
  const id = String(raw.id);
  const circuit = asMap(raw.circuit);
  const common = {
    id,
    url: String(raw.url).replace(/\/+$/, ''),
    service: text(raw.service, id),
    source: text(raw.source, `urn:proto-gateway:${id}`),
    circuit: { failures: num(circuit.failures, 5), cooldownMs: ms(circuit.cooldown, '30s') },
    headers: { ...(asMap(raw.headers) as Record<string, string>) },
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

function legacyBackend(raw: RawMap, common: Common, path: ConfigPath, ctx: Context): LegacyBackendConfig {
  return {
    ...common,
    kind: 'legacy',
    correlationHeader: text(raw.correlationHeader, 'X-Request-Id'),
    commands: asList(raw.commands).map((c, i) => legacyCommand(asMap(c), [...path, 'commands', i], ctx)),
    queries: asList(raw.queries).map((q) => legacyQuery(asMap(q))),
    records: asList(raw.records).map((r, i) => records(asMap(r), [...path, 'records', i], ctx)),
  };
}

function legacyCommand(raw: RawMap, path: ConfigPath, ctx: Context): LegacyCommandConfig {
  const type = String(raw.type);
  const request = asMap(raw.request);
  const events = asMap(raw.events);
  const fromFile = ctx.schemaFiles.get(formatPath([...path, 'schemaFile']));
  return {
    type,
    schema: text(raw.schema, kebab(type)),
    version: text(raw.version, defaultCatalogueVersion),
    ...optional(raw, ['description']),
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
    response: (raw.response as Record<string, unknown> | undefined) ?? {},
    request: { method: text(request.method, 'GET'), path: String(request.path), ...optional(request, ['query']) },
  };
}

function records(raw: RawMap, path: ConfigPath, ctx: Context): RecordsConfig {
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

/** The keys of `raw` among `keys` that are present (absent keys stay absent, not `undefined`). */
function optional(raw: RawMap, keys: string[]): Record<string, never> {
  return Object.fromEntries(keys.filter((key) => raw[key] !== undefined).map((key) => [key, raw[key]])) as Record<string, never>;
}

function text(value: unknown, fallback: string): string {
  return typeof value === 'string' ? value : fallback;
}

function num(value: unknown, fallback: number): number {
  return typeof value === 'number' ? value : fallback;
}

function flag(value: unknown, fallback: boolean): boolean {
  return typeof value === 'boolean' ? value : fallback;
}

function ms(value: unknown, fallback: string): number {
  return parseDuration(text(value, fallback));
}

function strings(value: unknown): string[] {
  return asList(value).map(String);
}

function schedule(value: unknown, fallback: string[]): number[] {
  return (Array.isArray(value) ? value : fallback).map((entry) => parseDuration(String(entry)));
}
