/**
 * The gateway's configuration after loading: defaults applied, `${VAR}` substituted, relative paths
 * made absolute, durations in milliseconds and sizes in bytes. The YAML keys are a public contract
 * (DESIGN.md, Configuration contract); this type mirrors them one to one.
 */
export interface GatewayConfig {
  /** Absolute path of the file this came from (for messages and relative paths). */
  file: string;
  server: ServerConfig;
  protocol: { version: string };
  auth: AuthConfig;
  storage: StorageConfig;
  metrics: { public: boolean };
  events: EventsConfig;
  commands: CommandsConfig;
  sse: SseConfig;
  webhooks: WebhooksConfig;
  registry: { allowNetworks: string[] };
  /** Absent = gRPC off. */
  grpc?: { host: string; port: number; publicEndpoint?: string };
  a2a: {
    enabled: boolean;
    settleMs: number;
    timeoutMs: number;
    /** The agent card's name; default `proto-gateway`. */
    name: string;
    /** The agent card's description. */
    description: string;
    /** Tasks kept at most (oldest dropped first); default 10000. */
    maxTasks: number;
    /** A task is forgotten this long after its last update, in ms; default 24h. */
    taskTtlMs: number;
    /** The public agent card lists the command catalogue as skills; default false (only the extended card, for `read`). */
    publicSkills: boolean;
    /** Tasks one principal keeps at most (a new task beyond it: 429 `QUOTA_EXCEEDED`); default half of `maxTasks`. */
    maxTasksPerPrincipal: number;
    /** Push-notification configs of one task at most; default 10. */
    maxPushConfigsPerTask: number;
    /** Push-notification configs of one principal at most, over its tasks; default 1000. */
    maxPushConfigsPerPrincipal: number;
    /** Push notifications waiting for delivery at most, in this process (beyond: dropped and counted); default 1000. */
    maxPendingPush: number;
    /** Push notifications of one principal's tasks waiting at most; default half of `maxPendingPush`. */
    maxPendingPushPerPrincipal: number;
  };
  mcp: {
    enabled: boolean;
    maxSessions: number;
    /** Sessions one principal may hold; default half of `maxSessions`. */
    maxSessionsPerPrincipal: number;
    idleTimeoutMs: number;
    /** Host header values accepted on /mcp and the A2A endpoint besides the public URL's host. */
    allowedHosts: string[];
  };
  /** The operator console: a static page that talks to the public API with the caller's key. */
  console: {
    /** Serve it; default true (false: its path answers 404). */
    enabled: boolean;
    /** Where it is served: `/` and one or more segments, no trailing `/`; default `/console`. */
    path: string;
  };
  /** OpenTelemetry; absent = tracing only where the standard OTEL_EXPORTER_OTLP_* variables say. */
  telemetry?: TelemetryConfig;
  backends: BackendConfig[];
}

/** `telemetry:`. */
export interface TelemetryConfig {
  traces?: TracesConfig;
}

/** `telemetry.traces`: OTLP/HTTP export of the gateway's spans. */
export interface TracesConfig {
  /** Base URL of the OTLP/HTTP receiver; absent = `OTEL_EXPORTER_OTLP_*ENDPOINT` decides. */
  endpoint?: string;
  /** Share of new traces recorded, 0..1; default 1. */
  sampleRatio: number;
  /** Headers of every export request. */
  headers?: Record<string, string>;
}

export interface ServerConfig {
  host: string;
  /** 0 = any free port. */
  port: number;
  /** Consumer-facing base URL, canonical, always ending in `/`; undefined = `http://{host}:{port}/` once listening. */
  publicUrl?: string;
  bodyLimitBytes: number;
  maxJsonDepth: number;
  shutdownTimeoutMs: number;
  /** Reload when the configuration file changes (as on SIGHUP). Default false. */
  watchConfig: boolean;
  /** Lowest level logged. Default `info`. */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  cors: { origins: string[] };
}

export interface AuthKey {
  /** Principal name. */
  id: string;
  key: string;
  scopes: Scope[];
}

export type Scope = 'read' | 'write' | 'admin';

export interface AuthConfig {
  /** `oauth2`: bearer tokens of the operator's identity provider, and the configured keys beside them. */
  type: 'none' | 'apiKey' | 'bearer' | 'oauth2';
  /** Header carrying an API key (default `X-Api-Key`). */
  header: string;
  /** Query parameter also carrying the key (for EventSource); undefined = not accepted. */
  queryParam?: string;
  keys: AuthKey[];
  /** `auth.oauth2`: present when `type` is `oauth2`. */
  oauth2?: OAuth2Config;
}

/** `auth.oauth2`: how bearer tokens of the identity provider are verified and mapped (README, Identity provider). */
export interface OAuth2Config {
  /** The `iss` every token must carry; also where OIDC discovery starts (`{issuer}/.well-known/openid-configuration`). */
  issuer?: string;
  /** The JWKS of the provider; default: the `jwks_uri` found by discovery. */
  jwksUrl?: string;
  /** Accepted `aud` values (a token must name one); empty = the audience is not checked. */
  audience: string[];
  /** Accepted JWS algorithms; default the asymmetric ones. `none` never; HS* only with `sharedSecret`. */
  algorithms: string[];
  /** HMAC secret of HS256/384/512 tokens; absent = HMAC tokens are refused. */
  sharedSecret?: string;
  /** Leeway on `exp`/`nbf`/`iat`, in ms (default 30 s). */
  clockToleranceMs: number;
  /** Keys fetched are kept this long before a re-read (default 10 min). */
  jwksCacheMaxAgeMs: number;
  /** At most one re-read of the JWKS per this interval for an unknown `kid` (default 30 s). */
  jwksCooldownMs: number;
  /** RFC 7662 introspection endpoint for opaque (non-JWT) tokens; absent = only JWTs. */
  introspectionUrl?: string;
  /** Client credentials of the gateway at the introspection endpoint (HTTP Basic). */
  clientId?: string;
  clientSecret?: string;
  /** The token endpoint advertised to callers; default the one discovery finds. */
  tokenUrl?: string;
  /** The claim naming the principal (default `sub`); a dotted path reaches nested claims. */
  principalClaim: string;
  /** The claim holding the caller's scopes or roles (default `scope`): a space-separated string or an array; dotted path for nested (`realm_access.roles`). */
  scopeClaim: string;
  /** Claim value → gateway scopes; absent = the values `read`, `write`, `admin` map to themselves. */
  scopeMap?: Record<string, Scope[]>;
  /** Query parameter also carrying the token (browser EventSource on `GET /events/stream`); absent = not accepted. */
  queryParam?: string;
}

export interface StorageConfig {
  driver: 'sqlite' | 'memory' | 'redis';
  /** Absolute path of the sqlite file. */
  path: string;
  url: string;
  prefix: string;
  /** `storage.redis`: durability and Sentinel settings of the Redis driver. */
  redis: RedisSettings;
  /** Runtime only, never from the file: told each Redis command's name, duration (s) and outcome (the metrics). */
  redisObserver?: RedisObserver;
}

/** Observes Redis commands (duration in seconds; `ok` false when the command failed). */
export type RedisObserver = (command: string, seconds: number, ok: boolean) => void;

/** `storage.redis`. */
export interface RedisSettings {
  /** Replicas that must acknowledge an accepted command (`WAIT`) before its 201; 0 = none. */
  waitReplicas: number;
  /** How long `WAIT`/`WAITAOF` may take, in ms. */
  waitTimeoutMs: number;
  /** `WAITAOF 1 0`: the write is fsynced to the primary's AOF before the 201 (Redis >= 7.2). */
  waitAof: boolean;
  /** Sentinel addresses, handed to ioredis with `name`. */
  sentinels?: Array<{ host: string; port: number }>;
  /** The Sentinel master name. */
  name?: string;
  /** Redis Cluster seed nodes (host, port): the stores use a Cluster client. */
  cluster?: Array<{ host: string; port: number }>;
}

export interface EventsConfig {
  pageSize: { default: number; max: number };
  /** One ingested event's JSON at most, in bytes; a larger one is refused once at ingestion (counted), never on delivery. Default 2 MiB. */
  maxEventBytes: number;
  retention: { maxEvents: number; maxAgeMs: number };
}

export interface CommandsConfig {
  idempotencyWindowMs: number;
  rateLimit: { perSecond: number; burst: number };
  dispatch: { timeoutMs: number; concurrency: number; retry: { scheduleMs: number[] } };
}

export interface SseConfig {
  keepaliveMs: number;
  maxBufferedBytes: number;
  maxConnections: number;
  maxConnectionsPerPrincipal: number;
  closeOnTerminal: boolean;
}

export interface WebhooksConfig {
  allowPrivateNetworks: string[];
  allowHttp: boolean;
  retry: { scheduleMs: number[] };
  timeoutMs: number;
  concurrency: number;
  /** Base64 of the 32-byte key sealing webhook secrets at rest; undefined = stored in plain text. */
  secretKey?: string;
  /** Former `secretKey` values, still opening what they sealed. */
  previousSecretKeys: string[];
  /** Subscriptions one principal may hold (default 100). */
  maxSubscriptionsPerPrincipal: number;
  /** Active subscriptions of all principals together (default 10000). */
  maxSubscriptions: number;
  /** Absolute path of an extra CA file, if any. */
  ca?: string;
  /** Auto-disable of a failing subscription: a streak of failed attempts this long (0 = never) and this many (default 5 days, 10). */
  disableAfter: { durationMs: number; failures: number };
  /** Default overlap of a secret rotation: the old secret still signs this long, ms (default 24 h). */
  rotationOverlapMs: number;
  /** Recoveries of a time range: posts a second per recovery (default 50), recoveries run at once per replica (default 4). */
  recovery: { perSecond: number; concurrency: number };
  /** Attempts a second at most to one subscription when it sets no `webhook.rateLimit`; 0 = no limit (default). */
  rateLimit: { perSecond: number };
}

export type BackendConfig = LegacyBackendConfig | ProtoBackendConfig;

interface BackendCommon {
  /** `[a-z][a-z0-9-]*`, used in `/services/{id}`. */
  id: string;
  /** Base URL of the backend, without a trailing `/`. */
  url: string;
  /** Service key in the public manifest (default: the id). */
  service: string;
  description?: string;
  version?: string;
  /** Source of the events the gateway emits for it (default `urn:proto-gateway:{id}`). */
  source: string;
  circuit: { failures: number; cooldownMs: number };
  /** Headers added to every request to this backend. */
  headers: Record<string, string>;
  /** Who sees and may use this backend (any of these values; `edge/access-rules.ts`); absent = everyone. */
  access?: string[];
  /** What the backend learns of the caller (`none` by default; see `backends/identity-headers.ts`). */
  forwardIdentity: ForwardIdentity;
}

/** `backends[].forwardIdentity`: none, the principal in headers, or the caller's verified token (queries and pass-through). */
export type ForwardIdentity = 'none' | 'header' | 'token';

export interface ProtoBackendConfig extends BackendCommon {
  kind: 'proto';
  /** How often its manifest and catalogues are re-read. */
  refreshMs: number;
  events: { follow: 'poll' | 'stream'; intervalMs: number };
}

export interface LegacyBackendConfig extends BackendCommon {
  kind: 'legacy';
  /** Header carrying the command id to the legacy service. */
  correlationHeader: string;
  commands: LegacyCommandConfig[];
  queries: LegacyQueryConfig[];
  records: RecordsConfig[];
}

export interface LegacyCommandConfig {
  type: string;
  /** Who sees and may send it (any of these values); absent = everyone who sees the backend. */
  access?: string[];
  schema: string;
  version: string;
  description?: string;
  /** The JSON Schema of `data` (inline `jsonSchema` or the parsed `schemaFile`). */
  jsonSchema: Record<string, unknown>;
  request: { method: string; path: string; body?: string };
  events: {
    success?: { type: string; data?: string };
    failure?: { type: string };
  };
}

export interface LegacyQueryConfig {
  schema: string;
  /** Who sees and may run it (any of these values); absent = everyone who sees the backend. */
  access?: string[];
  version: string;
  description?: string;
  parameters?: Record<string, unknown>;
  response: Record<string, unknown>;
  request: { method: string; path: string; query?: string };
  result?: string;
}

export interface RecordsConfig {
  path: string;
  intervalMs: number;
  /** Event types it can yield (for the catalogue). */
  types: string[];
  /** Parsed JSON Schema of their data (typed events), from `schema` (a file path). */
  schema?: Record<string, unknown>;
  /** Absolute path of that schema file. */
  schemaFile?: string;
  cursor?: { param: string; field: string };
  /** JSONata expression selecting the array of records from the response body (default: the body). */
  items?: string;
  event: {
    /** Template. */
    type: string;
    /** Template, hashed into a UUIDv5. */
    id: string;
    /** Expression. */
    time?: string;
    /** Expression. */
    correlation?: string;
    /** Expression. */
    data?: string;
    /** Template (default: the backend's source). */
    source?: string;
  };
}
