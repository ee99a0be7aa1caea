/**
 * Wiring: builds the gateway's component graph from a loaded configuration, once, at boot
 * (STYLE.md: "assemble at boot, not per request"). Protocol logic knows nothing of this file.
 */
import { redisStoreOptions } from './storage/redis.ts';
import pino, { type Logger } from 'pino';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { BackendDirectory } from './backends/directory.ts';
import { pinnedConnections } from './egress/pinned-connections.ts';
import type { GatewayConfig } from './config/types.ts';
import { Admission } from './edge/admission.ts';
import { OAuth2Identity } from './edge/oauth2/oauth2-identity.ts';
import { credentialCarriers } from './edge/credentials.ts';
import { admissionMetrics } from './metrics/admission.ts';
import { createCors } from './http/cors.ts';
import { protectedResourceRoutes } from './http/routes/protected-resource.ts';
import { discoveryRoutes } from './http/routes/discovery.ts';
import { docsRoutes } from './http/routes/docs.ts';
import { opsRoutes } from './http/routes/ops.ts';
import { passThroughRoutes } from './http/routes/passthrough.ts';
import type { Route } from './http/route.ts';
import { Router } from './http/router.ts';
import { createHttpServer } from './http/server.ts';
import { EventCatalogue } from './catalogue/event-catalogue.ts';
import { eventRoutes, filterOf, readEventPage } from './http/routes/events.ts';
import { mcpBridge } from './bridges/mcp/mcp-bridge.ts';
import { mcpMetrics } from './metrics/mcp.ts';
import { IngestorSet, type Ingestor } from './ingest/ingestors.ts';
import { RedisIngestionLeases } from './ingest/redis-leases.ts';
import type { EventLog } from './log/EventLog.ts';
import { openEventLog } from './log/open-log.ts';
import { Pruner } from './log/pruner.ts';
import { gatewayCapabilitySpecs, gatewayTransports } from './manifest/gateway-capabilities.ts';
import { GrpcBridge, PROTO_DIR } from './bridges/grpc/grpc-bridge.ts';
import { grpcMetrics } from './metrics/grpc.ts';
import { protoFileRoutes } from './http/routes/proto-files.ts';
import { PublicManifest } from './manifest/public-manifest.ts';
import { backendMetrics } from './metrics/backends.ts';
import { httpMetrics } from './metrics/http.ts';
import { ingestMetrics } from './metrics/ingest.ts';
import { logMetrics, retentionHeldBack } from './metrics/log.ts';
import { sseMetrics } from './metrics/sse.ts';
import { redisMetrics } from './metrics/redis.ts';
import { sseBridge } from './bridges/sse/sse-bridge.ts';
import { LiveTail } from './bridges/live-tail/live-tail.ts';
import { GATEWAY_VERSION } from './version.ts';
import { createCommandPath, type CommandPath } from './command-path.ts';
import { SsrfGuard, type Resolver } from './egress/ssrf-guard.ts';
import { WebhookBridge } from './bridges/webhooks/webhook-bridge.ts';
import { fanOutReader } from './bridges/webhooks/fan-out.ts';
import { subscriptionRoutes } from './bridges/webhooks/subscription-routes.ts';
import { webhookMetrics } from './metrics/webhooks.ts';
import { createQueryPath } from './query-path.ts';
import { serviceRoutes } from './http/routes/services.ts';
import { statusRoutes } from './http/routes/status.ts';
import { registryMetrics } from './metrics/registry.ts';
import { openRegistryStore } from './registry/open-registry-store.ts';
import { RedisReadiness } from './storage/redis-readiness.ts';
import type { CommandStore } from './commands/CommandStore.ts';
import { SqliteCommandStore } from './commands/sqlite-store.ts';
import { ServiceRegistry } from './registry/service-registry.ts';
import { Lifecycle } from './lifecycle.ts';
import { a2aBridge } from './bridges/a2a/a2a-bridge.ts';
import { openTaskStore } from './bridges/a2a/open-task-store.ts';
import { a2aMetrics } from './metrics/a2a.ts';
import { consoleRoutes } from './console/console-routes.ts';

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
  const log = await openEventLog(config.storage);
  life.add({ close: () => log.close() });
  logMetrics(registry, log);
  const router = new Router();
  // The public URL, once known (the listener's own URL when server.publicUrl is not set).
  const where = { publicUrl: config.server.publicUrl ?? '' };
  // auth.type oauth2: bearer tokens of the identity provider, one more verifier after the keys.
  const identity = config.auth.oauth2 && new OAuth2Identity({
    config: config.auth.oauth2, publicUrl: () => where.publicUrl, keyIds: config.auth.keys.map((key) => key.id), logger: logger.child({ component: 'oauth2' }),
  });
  // The one admission path of every transport: callers, scopes, quota pools.
  const admission = new Admission({
    config, metrics: admissionMetrics(registry), verifiers: identity ? [identity.verifier] : [], challenges: identity,
  });
  const http = createHttpServer({
    router,
    admission,
    cors: createCors(config.server.cors.origins, config.auth.header),
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
    const parts = await assemble({ config, options, logger, registry, log, life, url, state, admission, identity });
    router.add(parts.routes);
    storageUp = parts.storageUp;
    // Runtime services join the directory before anything starts: a paused one never delivers or reads.
    await parts.services.restore();
    await parts.backends.start();
    await life.start();
    state.ready = true;
    http.open();
    logger.info({ url, publicUrl: parts.publicUrl, backends: parts.backends.list().map((b) => b.id) }, 'listening');
    return { ...parts, routes: [...ops, ...parts.routes], url, config, registry, log, close };
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
  state: { ready: boolean; stopping: boolean };
  admission: Admission;
  identity: OAuth2Identity | undefined;
}

/** The features, built from the configuration; each component joins `life` as soon as it exists. */
async function assemble(input: AssembleInput) {
  const { config, options, logger, registry, log, life, admission, identity } = input;
  const tokenUrl = () => identity?.provider.known.tokenEndpoint;
  const publicUrl = config.server.publicUrl ?? input.url;
  // One guard for runtime-registered services: checked at registration, and pinned at every connect.
  const registryGuard = new SsrfGuard({
    allowHttp: true,
    allowPublic: false,
    allowPrivateNetworks: config.registry.allowNetworks,
    resolver: options.resolver,
    refusal: { code: 'SERVICE_ENDPOINT_REJECTED', field: 'endpoint' },
  });
  const runtimeConnections = pinnedConnections(registryGuard);
  life.add({ close: () => runtimeConnections.close() });
  const backends = new BackendDirectory(config.backends, publicUrl, logger, runtimeConnections);
  // Started by startGateway itself, after runtime services are restored; closed here.
  life.add({ close: () => backends.close() });
  backendMetrics(registry, backends);
  const capabilities = gatewayCapabilitySpecs(config);
  const catalogue = life.add(new EventCatalogue({ publicUrl, log, backends, logger }));
  // Built later in this function (it needs the command path); the manifest reads its port lazily.
  let grpc: GrpcBridge | undefined;
  const manifest = new PublicManifest({
    protocolVersion: config.protocol.version,
    gatewayVersion: GATEWAY_VERSION,
    publicUrl,
    auth: config.auth,
    tokenUrl,
    capabilities,
    backends,
    transports: () => gatewayTransports(config, publicUrl, grpc?.port, tokenUrl()),
  });
  identity?.provider.onDiscovered(() => manifest.invalidate());
  const carriers = credentialCarriers(config.auth);
  const queries = createQueryPath({
    publicUrl, backends, timeoutMs: config.commands.dispatch.timeoutMs, credentialQueryParam: carriers.queryParam, registry, logger,
  });
  life.add(queries.catalogue);
  const leases = config.storage.driver === 'redis' ? await openIngestionLeases(config.storage) : undefined;
  if (leases) life.add({ close: () => leases.close() });
  const ingestors = life.add(new IngestorSet({ backends, log, publicUrl, logger, metrics: ingestMetrics(registry), ...(leases && { leases }) }));
  const storageReadiness = config.storage.driver === 'redis' ? life.add(new RedisReadiness(config.storage)) : undefined;
  const registryStore = await openRegistryStore(config.storage);
  life.add({ close: () => registryStore.close() });
  const webhooks = life.add(new WebhookBridge({
    config: config.webhooks,
    storage: config.storage,
    log,
    metrics: webhookMetrics(registry),
    logger,
    isKnownService: (id): boolean => services.isKnown(id),
    resolver: options.resolver,
  }));
  // After the webhooks: retention never passes the fan-out's durable position.
  life.add(new Pruner(log, config.events.retention, logger, { readers: [fanOutReader(log)], onHeldBack: retentionHeldBack(registry) }));
  const commands = await createCommandPath({
    config, publicUrl, backends, log, registry, logger, onProduced: (backend, types) => catalogue.addProduced(backend, types),
  });
  for (const component of commands.components) life.add(component);
  // One live tail feeds every push transport; it follows the correlation aliases the dispatcher learns.
  const tail = life.add(new LiveTail({ source: log, logger }));
  commands.aliases.watch((id, alias) => tail.addAlias(id, alias));
  const sse = sseBridge({ config: config.sse, streams: admission.streams, tail, backends, metrics: sseMetrics(registry), logger, correlationAliases: commands.aliases });
  life.add(sse.hub);
  const mcp = config.mcp.enabled ? mcpBridge({
    config: config.mcp,
    surface: {
      commands,
      queries,
      events: {
        catalogue,
        page: (query) => readEventPage({ log, events: config.events, correlationAliases: commands.store }, query),
        filter: (query) => filterOf(query, undefined),
      },
      manifest,
      tail,
    },
    aliases: commands.aliases,
    admission,
    serverVersion: GATEWAY_VERSION,
    metrics: mcpMetrics(registry),
    logger,
  }) : undefined;
  if (mcp) life.add(mcp.sessions);
  const a2a = config.a2a.enabled ? await a2aFront({ config, publicUrl, commands, tail, registry, logger, life, webhooks, admission, tokenUrl }) : undefined;
  grpc = config.grpc && life.add(new GrpcBridge({
    config: config.grpc,
    admission,
    maxMessageBytes: config.server.bodyLimitBytes,
    maxJsonDepth: config.server.maxJsonDepth,
    tail,
    log,
    events: config.events,
    aliases: commands.aliases,
    ingestion: commands.ingestion,
    maxBufferedBytes: config.sse.maxBufferedBytes,
    closeOnTerminal: config.sse.closeOnTerminal,
    metrics: grpcMetrics(registry),
    logger: logger.child({ component: 'grpc' }),
  }));
  const services = new ServiceRegistry({
    backends,
    store: registryStore,
    guard: registryGuard,
    accepts: (id) => commands.catalogue.typesOf(id),
    produces: (id) => catalogue.typesOf(id),
    onRemoved: (id): Promise<string[]> => webhooks.subscriptions.deleteByService(id),
    metrics: registryMetrics(registry),
    logger,
  });
  const routes: Route[] = [
    ...discoveryRoutes(manifest),
    ...protectedResourceRoutes(config.auth, publicUrl),
    ...docsRoutes(publicUrl, capabilities),
    ...eventRoutes({ log, catalogue, backends, events: config.events, correlationAliases: commands.store }),
    ...sse.routes,
    ...protoFileRoutes(PROTO_DIR),
    ...subscriptionRoutes(webhooks.subscriptions),
    ...commands.routes,
    ...queries.routes,
    ...serviceRoutes(services),
    ...statusRoutes({
      registry,
      services,
      backends,
      ingestError: (backend) => ingestors.lastError(backend),
      outboxDepth: (backend) => commands.store.depth(backend),
      version: GATEWAY_VERSION,
      storage: config.storage.driver,
      startedMs: Date.now(),
    }),
    ...(mcp?.routes ?? []),
    ...(a2a?.routes ?? []),
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
  return { publicUrl, backends, manifest, commandStore: commands.store, ingestors: ingestors.byBackend, services, webhooks, routes, grpc, storageUp };
}

/** The A2A bridge with its task store, both joined to `life` (the store closes after the executor). */
async function a2aFront(input: {
  config: GatewayConfig; publicUrl: string; commands: CommandPath; tail: LiveTail; registry: Registry; logger: Logger; life: Lifecycle;
  webhooks: WebhookBridge; admission: Admission; tokenUrl: () => string | undefined;
}) {
  const { config, commands, life } = input;
  const taskStore = await openTaskStore(config.storage, { maxTasks: config.a2a.maxTasks, ttlMs: config.a2a.taskTtlMs });
  life.add({ close: () => taskStore.close() });
  const bridge = a2aBridge({
    config, publicUrl: input.publicUrl, catalogue: commands.catalogue, ingestion: commands.ingestion, aliases: commands.aliases, tail: input.tail,
    taskStore, metrics: a2aMetrics(input.registry), admission: input.admission, tokenUrl: input.tokenUrl, logger: input.logger.child({ component: 'a2a' }),
    post: (url, headers, body, signal) => input.webhooks.client.post(url, headers, body, signal),
  });
  life.add(bridge.executor);
  life.add(bridge.pushSender);
  return bridge;
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

function defaultRegistry(): Registry {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  return registry;
}

/** Wraps an async function so every call after the first returns the first call's promise. */
function once(fn: () => Promise<void>): () => Promise<void> {
  let result: Promise<void> | undefined;
  return () => (result ??= fn());
}

/** The ingestion leases of `storage.driver: redis` (one replica follows each backend), connected. */
async function openIngestionLeases(storage: GatewayConfig['storage']): Promise<RedisIngestionLeases> {
  const leases = new RedisIngestionLeases(redisStoreOptions(storage));
  await leases.open();
  return leases;
}
