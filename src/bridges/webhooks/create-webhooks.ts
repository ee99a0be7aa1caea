/**
 * The webhooks feature: subscriptions, their durable fan-out and signed deliveries through the
 * egress client, and the `/subscriptions` routes. Joins `life`. `retentionReaders` are what log
 * retention must never pass (the fan-out's durable position).
 */
import type { AccessRules } from '../../edge/access-rules.ts';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { GatewayConfig } from '../../config/types.ts';
import type { Resolver } from '../../egress/ssrf-guard.ts';
import type { Lifecycle } from '../../lifecycle.ts';
import type { EventLog } from '../../log/EventLog.ts';
import { webhookMetrics } from '../../metrics/webhooks.ts';
import { fanOutReader } from './fan-out.ts';
import { subscriptionRoutes } from './subscription-routes.ts';
import { WebhookBridge } from './webhook-bridge.ts';

/** What webhooks need. */
export interface WebhooksDeps {
  config: GatewayConfig;
  log: EventLog;
  registry: Registry;
  logger: Logger;
  life: Lifecycle;
  /** True when `serviceId` names a known service. */
  isKnownService(serviceId: string): boolean;
  /** Host resolver of the SSRF guard; default the system resolver (tests inject one). */
  resolver?: Resolver;
  /** Per-caller catalogues: each subscription carries only the events its creator saw. */
  access?: Pick<AccessRules, 'eventsSeenBy' | 'backend' | 'active'>;
}

/** The webhook bridge, its routes and the log readers retention waits for. */
export function createWebhooks(deps: WebhooksDeps) {
  const bridge = deps.life.add(new WebhookBridge({
    config: deps.config.webhooks,
    storage: deps.config.storage,
    log: deps.log,
    metrics: webhookMetrics(deps.registry),
    logger: deps.logger,
    isKnownService: deps.isKnownService,
    resolver: deps.resolver,
    access: deps.access,
  }));
  return { bridge, routes: subscriptionRoutes(bridge.subscriptions), retentionReaders: [fanOutReader(deps.log)] };
}
