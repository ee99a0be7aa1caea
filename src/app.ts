/**
 * Wiring: builds the gateway's component graph from a loaded configuration, once, at boot
 * (STYLE.md: "assemble at boot, not per request"). Protocol logic knows nothing of this file.
 * A configuration reload (`Gateway.reload`: SIGHUP, or the file watch of `server.watchConfig`)
 * hands each reloadable part its slice of the new generation (src/reload/reload-steps.ts).
 */
import pino, { type Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { createBackends } from './backends/create-backends.ts';
import type { BackendDirectory } from './backends/directory.ts';
import { createA2a } from './bridges/a2a/create-a2a.ts';
import { createGrpc } from './bridges/grpc/create-grpc.ts';
import { PROTO_DIR, type GrpcBridge } from './bridges/grpc/grpc-bridge.ts';
import { createLiveTail } from './bridges/live-tail/create-live-tail.ts';
import { createMcp } from './bridges/mcp/create-mcp.ts';
import { A2A_ENDPOINT_PATH } from './bridges/a2a/agent-card.ts';
import { createOriginGuard, guarded, type OriginGuard } from './http/origin-guard.ts';
import { createSse } from './bridges/sse/create-sse.ts';
import { createWebhooks } from './bridges/webhooks/create-webhooks.ts';
import type { WebhookBridge } from './bridges/webhooks/webhook-bridge.ts';
import { createCommandPath } from './command-path.ts';
import type { CommandStore } from './commands/CommandStore.ts';
import { SqliteCommandStore } from './commands/sqlite-store.ts';
import type { GatewayConfig } from './config/types.ts';
import { consoleRoutes } from './console/console-routes.ts';
import type { Resolver } from './egress/ssrf-guard.ts';
import { Admission } from './edge/admission.ts';
import { AccessRules, NOBODY } from './edge/access-rules.ts';
import { OAuth2Identity } from './edge/oauth2/oauth2-identity.ts';
import { credentialCarriers } from './edge/credentials.ts';
import { createCors, type Cors } from './http/cors.ts';
import type { Route } from './http/route.ts';
import { Router } from './http/router.ts';
import { discoveryRoutes } from './http/routes/discovery.ts';
import { protectedResourceRoutes } from './http/routes/protected-resource.ts';
import { docsRoutes } from './http/routes/docs.ts';
import { eventRoutes, filterOf, readEventPage } from './http/routes/events.ts';
import { opsRoutes } from './http/routes/ops.ts';
import { passThroughRoutes } from './http/routes/passthrough.ts';
import { protoFileRoutes } from './http/routes/proto-files.ts';
import { serviceAccessGuarded, serviceRoutes } from './http/routes/services.ts';
import { statusRoutes } from './http/routes/status.ts';
import { createHttpServer } from './http/server.ts';
import { createIngestion } from './ingest/create-ingestion.ts';
import type { Ingestor } from './ingest/ingestors.ts';
import { Lifecycle } from './lifecycle.ts';
import { createRetention } from './log/create-retention.ts';
import type { EventLog } from './log/EventLog.ts';
import { openEventLog } from './log/open-log.ts';
import { createManifest } from './manifest/create-manifest.ts';
import type { PublicManifest } from './manifest/public-manifest.ts';
import { admissionMetrics } from './metrics/admission.ts';
import { httpMetrics } from './metrics/http.ts';
import { logMetrics } from './metrics/log.ts';
import { redisMetrics } from './metrics/redis.ts';
import { createQueryPath } from './query-path.ts';
import { createRegistry } from './registry/create-registry.ts';
import type { ServiceRegistry } from './registry/service-registry.ts';
import { migrateToTaggedKeys } from './storage/redis-key-migration.ts';
import { RedisReadiness } from './storage/redis-readiness.ts';
import { GATEWAY_VERSION } from './version.ts';
import { loadConfig } from './gateway-config.ts';
import { configMetrics } from './metrics/config.ts';
import { ConfigReloader, type ReloadReport } from './reload/config-reloader.ts';
import { ConfigWatcher } from './reload/config-watcher.ts';
import { reloadSteps, type Reloadables } from './reload/reload-steps.ts';

export type { Component } from './lifecycle.ts';

export interface GatewayOptions {
  /** Default: pino JSON lines on stdout. */
  logger?: Logger;
  /** Default: a new registry with the default process metrics. */
  registry?: Registry;
  /** Host resolver of the SSRF guards (webhooks; runtime service endpoints); default `dns.lookup` (tests inject one). */
  resolver?: Resolver;
}

/** A running gateway. */
export interface Gateway {
  /** The address it listens on, e.g. `http://127.0.0.1:8080/`. */
  url: string;
  /** The consumer-facing base URL (`server.publicUrl`, or `url`). */
  publicUrl: string;
  config: GatewayConfig;
  registry: Registry;
  manifest: PublicManifest;
  backends: BackendDirectory;
  log: EventLog;
  /** The command store (accepted commands and the outbox). */
  commandStore: CommandStore;
  /** The ingestors of each backend (a proto follower, or one poller per legacy `records` entry); live. */
  ingestors: Map<string, Ingestor[]>;
  /** The service registry (descriptors, runtime registration, pause and resume). */
  services: ServiceRegistry;
  /** Webhook subscriptions and deliveries (service removal calls `webhooks.subscriptions.deleteByService`). */
  webhooks: WebhookBridge;
  /** The gRPC bridge, when the `grpc` section is present (its `port` is the bound one). */
  grpc?: GrpcBridge;
  /** Every HTTP route the gateway serves. */
  routes: Route[];
  /**
   * Loads `config.file` again and applies it in place (see src/reload/config-reloader.ts); resolves
   * with what it did, never rejects. `trigger` names the cause in the log (`SIGHUP`, `watch`).
   */
  reload(trigger: string): Promise<ReloadReport>;
  /** Stops accepting, drains within `server.shutdownTimeout`, closes every component. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts a gateway: opens the store (a store that cannot open stops the start before anything
 * listens), listens, reads the backends' manifests, registers the routes and starts every
 * component. If any step fails, whatever was opened is closed again before the error is thrown.
 */
export async function startGateway(loaded: GatewayConfig, options: GatewayOptions = {}): Promise<Gateway> {
  const logger = options.logger ?? pino({ base: { service: 'proto-gateway' } });
  const registry = options.registry ?? defaultRegistry();
  // Every Redis connection the stores open reports its commands to the metrics.
  const config: GatewayConfig = loaded.storage.driver === 'redis' ? { ...loaded, storage: { ...loaded.storage, redisObserver: redisMetrics(registry) } } : loaded;
  const life = new Lifecycle(logger);
  if (config.storage.driver === 'redis') {
    // Keys an older gateway wrote under the untagged prefix move to the tagged one before any store opens.
    const moved = await migrateToTaggedKeys(config.storage);
    if (moved > 0) logger.info({ moved, prefix: config.storage.prefix }, 'moved the Redis keys to the hash-tagged prefix');
  }
  const log = await openEventLog(config.storage);
  life.add({ close: () => log.close() });
  logMetrics(registry, log);
  const router = new Router();
  // The public URL, once known (the listener's own URL when server.publicUrl is not set).
  const where = { publicUrl: config.server.publicUrl ?? '' };
  // auth.type oauth2: bearer tokens of the identity provider, one more verifier after the keys.
  const identityOf = (auth: GatewayConfig['auth']) => auth.oauth2 && new OAuth2Identity({
    config: auth.oauth2, publicUrl: () => where.publicUrl, keyIds: auth.keys.map((key) => key.id), logger: logger.child({ component: 'oauth2' }),
  });
  const identity = identityOf(config.auth);
  // The one admission path of every transport: callers, scopes, quota pools.
  const admission = new Admission({
    config, metrics: admissionMetrics(registry), verifiers: identity ? [identity.verifier] : [], challenges: identity,
  });
  // The CORS policy of the current generation (a reload replaces it).
  let cors = createCors(config.server.cors.origins, config.auth.header);
  const http = createHttpServer({
    router,
    admission,
    cors: { apply: (req, res) => cors.apply(req, res), preflight: (req, res, methods) => cors.preflight(req, res, methods) } satisfies Cors,
    limits: { maxBytes: config.server.bodyLimitBytes, maxDepth: config.server.maxJsonDepth },
    logger,
    metrics: httpMetrics(registry),
  });
  const state = { ready: false, stopping: false };
  // Health and readiness answer from the moment the listener opens (every other route is a 503
  // NOT_READY until start-up is over); the storage check is known once the stores are assembled.
  let storageUp = (): boolean => true;
  const ops = opsRoutes({
    registry,
    metricsPublic: config.metrics.public,
    notReady: () => [...notReady(state), ...(storageUp() ? [] : ['storage'])],
  });
  router.add(ops);
  // One deadline for the whole shutdown, shared by every step. Readiness turns 503 and new
  // requests are refused at once, but the listener stays open until the end, so load balancers
  // see "not ready" (not "connection refused") while streams end, requests in flight are
  // answered and the components drain (dispatches in flight finish, webhook attempts go back to
  // the queue). The stores close only after the last request that could use them.
  const close = once(async () => {
    const deadlineMs = Date.now() + config.server.shutdownTimeoutMs;
    const left = (): number => Math.max(0, deadlineMs - Date.now());
    state.ready = false;
    state.stopping = true;
    http.refuse();
    await life.drain();
    await http.settled(left());
    await life.close(deadlineMs);
    await http.close(left());
    logger.info('stopped');
  });
  try {
    const address = await http.listen(config.server.host, config.server.port);
    const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}/`;
    where.publicUrl ||= url;
    if (identity) life.add(identity);
    const parts = await assemble({ config, options, logger, registry, log, life, url, admission, identity, identityOf, setCors: (origins) => (cors = createCors(origins, config.auth.header)) });
    router.add(parts.routes);
    storageUp = parts.storageUp;
    // Runtime services join the directory before anything starts: a paused one never delivers or reads.
    await parts.services.restore();
    await parts.backends.start();
    await life.start();
    state.ready = true;
    http.open();
    logger.info({ url, publicUrl: parts.publicUrl, backends: parts.backends.list().map((b) => b.id) }, 'listening');
    const reload = (trigger: string) => parts.reloader.reload(trigger);
    return { ...parts, routes: [...ops, ...parts.routes], url, config, registry, log, close, reload };
  } catch (err) {
    await close();
    throw err;
  }
}

interface AssembleInput {
  config: GatewayConfig;
  options: GatewayOptions;
  logger: Logger;
  registry: Registry;
  log: EventLog;
  life: Lifecycle;
  url: string;
  admission: Admission;
  identity: OAuth2Identity | undefined;
  /** Builds the OAuth2 identity of a configuration (a reload replaces it when `auth.oauth2` changed). */
  identityOf(auth: GatewayConfig['auth']): OAuth2Identity | undefined;
  /** Replaces the HTTP front's CORS policy. */
  setCors(origins: string[]): void;
}

/**
 * The features, in order, and what each needs; each joins `life` as soon as it exists (so they
 * start in this order and close in reverse). The order is the dependency order: backends before
 * what talks to them, the stores before what writes to them, the live tail before the push bridges.
 */
async function assemble(input: AssembleInput) {
  const { config, options, logger, registry, log, life, admission } = input;
  // The identity of the current generation (a reload may replace it).
  let identity = input.identity;
  const tokenUrl = () => identity?.provider.known.tokenEndpoint;
  const publicUrl = config.server.publicUrl ?? input.url;
  const common = { registry, logger, life };
  const { backends, endpointGuard } = createBackends({ config, publicUrl, resolver: options.resolver, ...common });
  // The gRPC bridge is built later (it needs the command path); the manifest reads its port lazily.
  let grpc: GrpcBridge | undefined;
  // Per-caller catalogues: one set of `access` rules for every path and transport.
  const access = new AccessRules(config.backends);
  const listed = (backendId: string): boolean => access.backend(NOBODY, backendId);
  const { catalogue, manifest, capabilities } = createManifest({ config, publicUrl, backends, log, logger, life, grpcPort: () => grpc?.port, tokenUrl, listed });
  identity?.provider.onDiscovered(() => manifest.invalidate());
  const carriers = credentialCarriers(config.auth);
  const queries = createQueryPath({ publicUrl, backends, timeoutMs: config.commands.dispatch.timeoutMs, credentialQueryParam: carriers.queryParam, access, registry, logger });
  life.add(queries.catalogue);
  const ingestors = await createIngestion({ storage: config.storage, maxEventBytes: config.events.maxEventBytes, backends, log, publicUrl, ...common });
  const storageReadiness = config.storage.driver === 'redis' ? life.add(new RedisReadiness(config.storage)) : undefined;
  const services = await createRegistry({
    storage: config.storage,
    backends,
    guard: endpointGuard,
    accepts: (id) => commands.catalogue.typesOf(id),
    produces: (id) => catalogue.typesOf(id),
    onRemoved: (id): Promise<string[]> => webhooks.bridge.subscriptions.deleteByService(id),
    abandonCommands: (id, source) => commands.dispatcher.abandon(id, source),
    ...common,
  });
  const webhooks = createWebhooks({ config, log, isKnownService: (id) => services.isKnown(id), resolver: options.resolver, access, ...common });
  // After the webhooks: retention never passes the fan-out's durable position.
  const retention = createRetention({ log, retention: config.events.retention, readers: webhooks.retentionReaders, ...common });
  const commands = await createCommandPath({ config, publicUrl, backends, log, registry, logger, access, onProduced: (backend, types) => catalogue.addProduced(backend, types) });
  for (const component of commands.components) life.add(component);
  const tail = createLiveTail({ log, aliases: commands.aliases, logger, life });
  const sse = createSse({ config: config.sse, admission, tail, backends, correlationAliases: commands.aliases, access, ...common });
  const eventPages = { log, events: config.events, correlationAliases: commands.store };
  const mcp = await createMcp({
    config: config.mcp,
    storage: config.storage,
    log,
    surface: {
      commands,
      queries,
      events: { catalogue, page: (query, visible) => readEventPage(eventPages, query, undefined, visible), filter: (query) => filterOf(query, undefined) },
      manifest,
      tail,
      access,
    },
    aliases: commands.aliases,
    admission,
    ...common,
  });
  const a2a = await createA2a({
    config, publicUrl, catalogue: commands.catalogue, ingestion: commands.ingestion, aliases: commands.aliases, tail,
    backendConfigs: () => reloader.current.backends,
    post: (url, headers, body, signal) => webhooks.bridge.client.post(url, headers, body, signal),
    admission,
    access,
    tokenUrl,
    ...common,
  });
  grpc = createGrpc({ config, tail, log, aliases: commands.aliases, ingestion: commands.ingestion, admission, access, ...common });
  const guardOf = (origins: string[]) => createOriginGuard({ publicUrl, corsOrigins: origins, allowedHosts: config.mcp.allowedHosts });
  // The origin guard of the current generation (a reload replaces it with the CORS origins).
  let currentGuard = guardOf(config.server.cors.origins);
  const originGuard: OriginGuard = (req) => currentGuard(req);
  const routes: Route[] = [
    ...discoveryRoutes(manifest),
    ...protectedResourceRoutes(config.auth, publicUrl, () => reloader.current.auth),
    ...docsRoutes(publicUrl, capabilities),
    ...eventRoutes({ log, catalogue, backends, events: config.events, correlationAliases: commands.store, access }),
    ...sse.routes,
    ...protoFileRoutes(PROTO_DIR),
    ...webhooks.routes,
    ...commands.routes,
    ...queries.routes,
    ...serviceRoutes(services, { access, commandOf: (type) => commands.catalogue.byType(type) }),
    ...statusRoutes({
      registry,
      services,
      backends,
      ingestError: (backend) => ingestors.lastError(backend),
      outboxDepth: (backend) => commands.store.depth(backend),
      version: GATEWAY_VERSION,
      storage: config.storage.driver,
      startedMs: Date.now(),
      config: () => reloader.status(),
      visible: (principal, id) => access.backend(principal, id),
    }),
    // Both endpoints can be driven by a page in a visitor's browser: Origin and Host are checked first.
    ...guarded(mcp?.routes ?? [], originGuard),
    ...(a2a?.routes ?? []).map((route) => (route.path === `/${A2A_ENDPOINT_PATH}` ? guarded([route], originGuard)[0]! : route)),
    ...(config.console.enabled ? consoleRoutes({ path: config.console.path, auth: config.auth }) : []),
    // The pass-through is the fallback under /services/{id}/: the gateway's own routes win over it.
    ...passThroughRoutes({
      backends,
      credentialHeaders: carriers.headers,
      credentialQueryParam: carriers.queryParam,
      timeoutMs: config.commands.dispatch.timeoutMs,
      maxBodyBytes: config.server.bodyLimitBytes,
    }),
  ];
  const storageUp = (): boolean => storageReady(storageReadiness, commands.store);
  const reloadables: Reloadables = {
    boot: config,
    logger,
    backends,
    isRuntimeService: (id) => services.isKnown(id) && !backends.isConfigured(id),
    abandonCommands: (id, source) => commands.dispatcher.abandon(id, source),
    access: [access],
    admission,
    ...(identity && {
      replaceIdentity: async (next: GatewayConfig) => {
        const fresh = input.identityOf(next.auth);
        await fresh?.start();
        fresh?.provider.onDiscovered(() => manifest.invalidate());
        const old = identity;
        identity = fresh;
        old?.close();
        manifest.invalidate();
        return { verifiers: fresh ? [fresh.verifier] : [], challenges: fresh };
      },
    }),
    cors: (origins) => {
      input.setCors(origins);
      currentGuard = guardOf(origins);
    },
    rateLimit: commands.rateLimit,
    sse: sse.hub,
    mcp,
    a2a,
    subscriptions: webhooks.bridge.subscriptions,
    retention,
  };
  const reloader = new ConfigReloader({ file: config.file, boot: config, load: (file) => loadConfig(file), steps: reloadSteps(reloadables), metrics: configMetrics(registry), logger: logger.child({ component: 'reload' }) });
  if (config.server.watchConfig) life.add(new ConfigWatcher({ file: config.file, onChange: () => void reloader.reload('watch'), logger }));
  return { publicUrl, backends, manifest, commandStore: commands.store, ingestors: ingestors.byBackend, services, webhooks: webhooks.bridge, routes: serviceAccessGuarded(routes, access), grpc, storageUp, reloader };
}

/** Whether the store takes writes: Redis answers, or the SQLite command store's writer thread is up. */
function storageReady(redis: RedisReadiness | undefined, commandStore: CommandStore): boolean {
  if (redis) return redis.ready();
  return !(commandStore instanceof SqliteCommandStore) || commandStore.writer.up;
}

/** Why the gateway is not ready (the `pending` of a 503 from `/readyz`): empty once it is. */
function notReady(state: { ready: boolean; stopping: boolean }): string[] {
  if (state.stopping) return ['shutdown'];
  return state.ready ? [] : ['starting'];
}

/** A new registry with the default process metrics (what `startGateway` uses when given none). */
export function defaultRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Wraps an async function so every call after the first returns the first call's promise. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let result: Promise<void> | undefined;
  return () => (result ??= fn());
}
