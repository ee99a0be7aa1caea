/**
 * Wiring of the command path (part of `app.ts`'s job, kept beside it so the feature wires in as
 * one block): the command store, the catalogue, the ingestion pipeline, the backend adapters, the
 * dispatcher, their metrics and routes, all built once from the configuration. A backend added at
 * runtime (or by a reload) gets its adapter, a replaced one a new adapter (so a command is delivered
 * with the mapping current at delivery time), a removed one loses it (its undelivered commands stay
 * in the outbox until the remover abandons them);
 * the dispatcher skips paused backends and looks again when one is resumed.
 */
import { AccessRules } from './edge/access-rules.ts';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { Backend, BackendDirectory } from './backends/directory.ts';
import { LegacyCommandDelivery } from './backends/legacy-dispatch.ts';
import { ProtoCommandDelivery } from './backends/proto-dispatch.ts';
import { CommandCatalogue } from './catalogue/command-catalogue.ts';
import { AliasNotifier } from './commands/alias-notifier.ts';
import type { CommandStore } from './commands/CommandStore.ts';
import type { CommandDelivery } from './commands/delivery.ts';
import { Dispatcher } from './commands/dispatcher.ts';
import { createIngestion, type CommandIngestion } from './commands/ingestion.ts';
import { openCommandStore, openRateLimit } from './commands/open-store.ts';
import type { PrincipalRateLimit } from './commands/rate-limit.ts';
import type { GatewayConfig } from './config/types.ts';
import type { Route } from './http/route.ts';
import { commandRoutes } from './http/routes/commands.ts';
import type { EventLog } from './log/EventLog.ts';
import { commandMetrics } from './metrics/commands.ts';

/** How often expired idempotency records are purged, in ms (at most; sooner when the window is shorter). */
const PURGE_INTERVAL_MS = 60_000;

/** What the command path needs from the rest of the gateway. */
export interface CommandPathOptions {
  config: GatewayConfig;
  publicUrl: string;
  backends: BackendDirectory;
  log: EventLog;
  registry: Registry;
  logger: Logger;
  /** Told the event types each backend's commands produce (the event catalogue). */
  onProduced(backend: string, types: string[]): void;
  /** Per-caller catalogues (`access`), shared with the other paths; default: built from `config.backends`. */
  access?: AccessRules;
}

/** The command path, built: its components in start order, its routes, and its store (for correlation aliases). */
export interface CommandPath {
  components: Array<{ start?(): Promise<void> | void; close(): Promise<void> | void }>;
  routes: Route[];
  store: CommandStore;
  catalogue: CommandCatalogue;
  dispatcher: Dispatcher;
  /** The backends' own ids for command ids, with live notices (SSE streams follow them). */
  aliases: AliasNotifier;
  /** The one command pipeline (validation, idempotency, outbox) every front submits through: HTTP, gRPC, A2A, MCP. */
  ingestion: CommandIngestion;
  /** Per-caller catalogues (`access`) of commands. */
  access: AccessRules;
  /** The per-principal rate limit of ingestion (`commands.rateLimit`; a reload changes it). */
  rateLimit: PrincipalRateLimit;
}

/** Opens the command store and builds the command path (nothing is delivered before `start()`). */
export async function createCommandPath(options: CommandPathOptions): Promise<CommandPath> {
  const { config, backends, logger } = options;
  const metrics = commandMetrics(options.registry);
  const store = await openCommandStore(config.storage, logger);
  const rateLimit = await openRateLimit(config.storage, config.commands.rateLimit).catch(async (err: unknown) => {
    await store.close();
    throw err;
  });
  metrics.watchOutbox(() => store.depth());
  const catalogue = new CommandCatalogue({ publicUrl: options.publicUrl, backends, logger, metrics, onProduced: options.onProduced });
  const { dispatch } = config.commands;
  const aliases = new AliasNotifier(store);
  const dispatcher = new Dispatcher({
    outbox: store,
    aliases,
    log: options.log,
    deliveries: followDeliveries(backends, catalogue, () => dispatcher.wake()),
    isPaused: (backend) => backends.isPaused(backend),
    timeoutMs: dispatch.timeoutMs,
    concurrency: dispatch.concurrency,
    retryScheduleMs: dispatch.retry.scheduleMs,
    drainMs: config.server.shutdownTimeoutMs,
    metrics,
    logger: logger.child({ component: 'dispatcher' }),
  });
  const access = options.access ?? new AccessRules(config.backends);
  const ingestion = createIngestion({
    catalogue,
    access,
    store,
    idempotencyWindowMs: config.commands.idempotencyWindowMs,
    rateLimiter: rateLimit,
    metrics,
    onEnqueued: () => dispatcher.wake(),
    handoff: dispatcher,
  });
  const purger = idempotencyPurger(store, config.commands.idempotencyWindowMs, logger);
  return {
    components: [{ close: () => store.close() }, rateLimit, catalogue, purger, aliases, dispatcher],
    routes: commandRoutes({ catalogue, ingestion, backends, access }),
    store,
    access,
    rateLimit,
    catalogue,
    dispatcher,
    aliases,
    ingestion,
  };
}

/** The adapter of every backend, kept in step with the directory; `wake` is called when a backend is added or resumed. */
function followDeliveries(backends: BackendDirectory, catalogue: CommandCatalogue, wake: () => void): Map<string, CommandDelivery> {
  const byBackend = new Map<string, CommandDelivery>();
  const entryOf = (type: string) => catalogue.byType(type);
  const deliveryOf = (backend: Backend): CommandDelivery => (backend.kind === 'proto' ? new ProtoCommandDelivery(backend, entryOf) : new LegacyCommandDelivery(backend));
  for (const backend of backends.list()) byBackend.set(backend.id, deliveryOf(backend));
  backends.watch({
    added: (backend) => {
      byBackend.set(backend.id, deliveryOf(backend));
      wake();
    },
    // A reload changed the backend: the next attempt of every entry (accepted before or after) uses the new mapping.
    replaced: (_previous, next) => {
      byBackend.set(next.id, deliveryOf(next));
      wake();
    },
    removed: (backend) => void byBackend.delete(backend.id),
    resumed: () => wake(),
  });
  return byBackend;
}

/** A timer that deletes expired idempotency records. */
function idempotencyPurger(store: CommandStore, windowMs: number, logger: Logger) {
  let timer: NodeJS.Timeout | undefined;
  return {
    start() {
      timer = setInterval(() => {
        store.purgeExpired(Date.now()).catch((err: unknown) => logger.warn({ err }, 'could not purge idempotency records'));
      }, Math.max(1_000, Math.min(PURGE_INTERVAL_MS, windowMs)));
      timer.unref();
    },
    close() {
      clearInterval(timer);
    },
  };
}
