/**
 * The webhook bridge (DESIGN.md: bridges events out; PROTOCOL.md 2.7, 4.5, 4.6, 6.3), assembled at
 * boot from `webhooks` and `storage`: the subscription store and delivery queue (SQLite on the
 * X, the address-pinning delivery client, the
 * dispatcher and the fan-out from the log.
 *
 * Lifecycle: `start()` opens the stores, starts the dispatcher (deliveries a killed process left in
 * flight are claimed again when their lease ends) and catches up on the log from the fan-out
 * checkpoint; `close()` stops the fan-out, aborts attempts in flight and releases their claims back
 * to `pending`, then closes the client and the stores. Nothing queued is lost; `close()` twice is safe.
 */
import type { AccessRules } from '../../edge/access-rules.ts';
import { audienceOf, eventSeenByEveryone, eventStillVisible } from './audience.ts';
import { redisStoreOptions } from '../../storage/redis.ts';
import type { Logger } from 'pino';
import type { StorageConfig, WebhooksConfig } from '../../config/types.ts';
import type { EventLog } from '../../log/EventLog.ts';
import type { WebhookMetrics } from '../../metrics/webhooks.ts';
import type { DeliveryQueue } from './DeliveryQueue.ts';
import { DeliveryClient } from '../../egress/delivery-client.ts';
import { DeliveryDispatcher, LEASE_MARGIN_MS, type DeliveryPoster } from './delivery-dispatcher.ts';
import { WebhookFanOut } from './fan-out.ts';
import { MemoryDeliveryQueue } from './memory-delivery-queue.ts';
import { MemorySubscriptionStore } from './memory-subscription-store.ts';
import { decodeSecretKey, SealedSubscriptionStore, SecretBox } from './secret-box.ts';
import { SqliteDeliveryQueue } from './sqlite-delivery-queue.ts';
import { RedisDeliveryQueue } from './redis-delivery-queue.ts';
import { RedisSubscriptionStore } from './redis-subscription-store.ts';
import { SqliteSubscriptionStore } from './sqlite-subscription-store.ts';
import { SsrfGuard, type Resolver } from '../../egress/ssrf-guard.ts';
import { OperationalEvents } from './operational-events.ts';
import { RecoveryRunner } from './recovery-runner.ts';
import { MemoryDeliveryRateLimit, type DeliveryRateLimit } from './DeliveryRateLimit.ts';
import { RedisDeliveryRateLimit } from './redis-delivery-rate-limit.ts';
import { Subscriptions } from './subscriptions.ts';
import { CachedSubscriptionStore } from './cached-subscription-store.ts';
import type { SubscriptionStore } from './SubscriptionStore.ts';

/** Unfinished deliveries at most before the fan-out parks (see `fan-out.ts`). */
export const MAX_QUEUED = 100_000;

/** Finished deliveries kept for inspection: succeeded ones 1 h, dead letters 7 days and at most 10 000. */
export const RETENTION = { succeededMs: 60 * 60 * 1000, deadMs: 7 * 24 * 60 * 60 * 1000, maxDead: 10_000 };

/** How often finished deliveries beyond `RETENTION` are purged, ms. */
export const PURGE_EVERY_MS = 10 * 60 * 1000;

/** How often rotated-out secrets whose overlap ended are deleted from the store, ms (they stop signing at once; this bounds how long they are kept). */
export const SECRET_SWEEP_EVERY_MS = 1000;

/** Collaborators and settings of the bridge. */
export interface WebhookBridgeOptions {
  config: WebhooksConfig;
  storage: StorageConfig;
  log: EventLog;
  metrics: WebhookMetrics;
  logger: Logger;
  /** True when `serviceId` names a known service. */
  isKnownService: (serviceId: string) => boolean;
  /** Host resolver of the SSRF guard; default the system resolver (tests inject one). */
  resolver?: Resolver;
  /** Posts deliveries; default a `DeliveryClient` (benchmarks may inject another). */
  poster?: DeliveryPoster;
  /** Per-caller catalogues: each subscription carries only the events its creator saw (`audience.ts`). */
  access?: Pick<AccessRules, 'eventsSeenBy' | 'backend' | 'active'>;
}

/** The webhook bridge: a component with `start`/`close`, and the subscription manager for the routes. */
export class WebhookBridge {
  /** Subscription management (the `/subscriptions` routes, service removal). */
  readonly subscriptions: Subscriptions;
  readonly #store: SubscriptionStore;
  readonly #queue: DeliveryQueue;
  readonly #client: DeliveryClient;
  readonly #dispatcher: DeliveryDispatcher;
  readonly #fanOut: WebhookFanOut;
  readonly #recoveries: RecoveryRunner;
  readonly #rateLimit: DeliveryRateLimit;
  readonly #logger: Logger;
  #purgeTimer: NodeJS.Timeout | undefined;
  #secretTimer: NodeJS.Timeout | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: WebhookBridgeOptions) {
    const { config, metrics, logger } = options;
    const storage = options.storage;
    this.#logger = logger;
    if (storage.driver === 'redis') {
      const redis = redisStoreOptions(storage);
      this.#store = sealedStore(new RedisSubscriptionStore(redis), config, logger);
      this.#queue = new RedisDeliveryQueue(redis);
      this.#rateLimit = new RedisDeliveryRateLimit(redis);
    } else {
      const sqlite = storage.driver === 'sqlite';
      // One process writes these stores: its reads are kept until its own writes change them.
      this.#store = new CachedSubscriptionStore(sealedStore(sqlite ? new SqliteSubscriptionStore(storage.path) : new MemorySubscriptionStore(), config, logger));
      this.#queue = sqlite ? new SqliteDeliveryQueue(storage.path) : new MemoryDeliveryQueue();
      this.#rateLimit = new MemoryDeliveryRateLimit();
    }
    const guard = new SsrfGuard({
      allowHttp: config.allowHttp,
      allowPrivateNetworks: config.allowPrivateNetworks,
      resolver: options.resolver,
      onRefusal: (reason) => metrics.refusals.inc({ reason }),
    });
    // As many connections to one origin as attempts may be in flight to it: several subscriptions
    // to one receiver share its origin's pool (4 connections made their attempts queue behind each other).
    this.#client = new DeliveryClient({ guard, timeoutMs: config.timeoutMs, caFile: config.ca, connectionsPerOrigin: config.concurrency });
    const events = new OperationalEvents(options.log, logger);
    const audience = audienceOf(options.access);
    this.#dispatcher = new DeliveryDispatcher({
      queue: this.#queue,
      subscriptions: this.#store,
      client: options.poster ?? this.#client,
      scheduleMs: config.retry.scheduleMs,
      concurrency: config.concurrency,
      leaseMs: config.timeoutMs + LEASE_MARGIN_MS,
      metrics,
      logger,
      events,
      disableAfter: config.disableAfter,
      rateLimit: { limiter: this.#rateLimit, defaultPerSecond: config.rateLimit.perSecond },
      stillVisible: eventStillVisible(audience, options.log),
      seenByEveryone: eventSeenByEveryone(options.access, options.log),
    });
    this.#recoveries = new RecoveryRunner({
      store: this.#store,
      log: options.log,
      client: options.poster ?? this.#client,
      perSecond: config.recovery.perSecond,
      concurrency: config.recovery.concurrency,
      logger,
      audience,
    });
    this.#fanOut = new WebhookFanOut({
      log: options.log,
      subscriptions: this.#store,
      queue: this.#queue,
      maxQueued: MAX_QUEUED,
      onEnqueued: () => this.#dispatcher.wake(),
      logger,
      audience,
    });
    this.subscriptions = new Subscriptions({
      store: this.#store,
      queue: this.#queue,
      guard,
      log: options.log,
      isKnownService: options.isKnownService,
      onDeleted: (id) => this.#dispatcher.abortSubscription(id),
      onRedelivered: () => this.#dispatcher.wake(),
      limits: { perPrincipal: options.config.maxSubscriptionsPerPrincipal, total: options.config.maxSubscriptions },
      events,
      rotationOverlapMs: config.rotationOverlapMs,
      onRecovery: () => this.#recoveries.wake(),
      access: options.access,
    });
    metrics.trackQueue(() => this.#queue.counts());
  }

  /** Opens the stores, starts dispatching and the fan-out (which catches up in the background). */
  async start(): Promise<void> {
    await this.#store.open();
    await this.#queue.open();
    await this.#rateLimit.open();
    await this.#purge();
    await this.#dispatcher.start();
    await this.#fanOut.start();
    this.#recoveries.start();
    this.#purgeTimer = setInterval(() => void this.#purge(), PURGE_EVERY_MS);
    this.#purgeTimer.unref();
    this.#secretTimer = setInterval(() => void this.#dropExpiredSecrets(), SECRET_SWEEP_EVERY_MS);
    this.#secretTimer.unref();
  }

  /** The SSRF-guarded, address-pinned HTTP client of deliveries (A2A push notifications post through it too). */
  get client(): DeliveryClient {
    return this.#client;
  }

  /** Resolves once the fan-out has read the log up to its head (tests and benchmarks). */
  settled(): Promise<void> {
    return this.#fanOut.settled();
  }

  /** Stops the fan-out and the dispatcher (in-flight attempts released back to pending), closes client and stores. Idempotent. */
  close(): Promise<void> {
    this.#closing ??= this.#shutdown();
    return this.#closing;
  }

  async #shutdown(): Promise<void> {
    clearInterval(this.#purgeTimer);
    clearInterval(this.#secretTimer);
    await this.#fanOut.close();
    await this.#recoveries.close();
    await this.#dispatcher.close();
    await this.#client.close();
    await this.#queue.close();
    await this.#rateLimit.close();
    await this.#store.close();
  }

  async #dropExpiredSecrets(): Promise<void> {
    try {
      await this.#store.dropExpiredSecrets(Date.now());
    } catch (err) {
      this.#logger.error({ err }, 'expired webhook secrets could not be deleted; trying again');
    }
  }

  async #purge(): Promise<void> {
    const now = Date.now();
    try {
      await this.#queue.purge({ succeededBeforeMs: now - RETENTION.succeededMs, deadBeforeMs: now - RETENTION.deadMs, maxDead: RETENTION.maxDead });
    } catch (err) {
      this.#logger.error({ err }, 'webhook delivery purge failed');
    }
  }
}

/**
 * The store behind a `SealedSubscriptionStore` when `webhooks.secretKey` is set; without it the
 * store itself, and a warning that secrets are kept in plain text.
 */
function sealedStore(store: SubscriptionStore, config: WebhooksConfig, logger: Logger): SubscriptionStore {
  if (config.secretKey === undefined) {
    logger.warn('webhooks.secretKey is not set: webhook secrets are stored in plain text (set it to 32 random bytes in base64 to encrypt them)');
    return store;
  }
  return new SealedSubscriptionStore(store, new SecretBox(decodeSecretKey(config.secretKey), config.previousSecretKeys.map(decodeSecretKey)));
}
