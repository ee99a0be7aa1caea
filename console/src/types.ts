/**
 * The shapes of the public API's answers the console reads (README, Endpoints), as far as it reads
 * them.
 */
import type { Bucket } from './rates.ts';

/** A CloudEvents envelope from the log or a stream. */
export interface CloudEvent {
  id: string;
  type: string;
  source: string;
  time?: string;
  correlationid?: string;
  data?: unknown;
  [attribute: string]: unknown;
}

/** `GET /services`: one registered service. */
export interface ServiceDescriptor {
  id: string;
  name: string;
  description?: string;
  version?: string;
  type?: string;
  status: 'running' | 'paused' | 'error' | 'stopped';
  accepts: string[];
  produces: string[];
}

/** `GET /status`: one backend's health. */
export interface BackendStatus {
  id: string;
  /** `proto`, `legacy`, or the type of a service registered at run time. */
  kind: string;
  status: ServiceDescriptor['status'];
  /** Null for a service the gateway does not call itself (registered at run time). */
  circuit: { state: 'closed' | 'open' | 'half-open' } | null;
  ingest: { lagSeconds: number | null };
  outbox: { depth: number };
  lastError: string | null;
}

/** `GET /status`: the gateway at a glance, counters cumulative since start. */
export interface GatewayStatus {
  gateway: { version: string; storage: string; uptimeSeconds: number };
  backends: BackendStatus[];
  webhooks: { deliveries: Record<'pending' | 'in-flight' | 'succeeded' | 'dead', number> };
  counters: { commandsAccepted: number; eventsAppended: number; webhookDeliveries: number; httpRequests: number };
  commandLatency: { buckets: Bucket[]; count: number; sum: number };
  /** The configuration generation, the settings that need a restart, the last reload (absent on older gateways). */
  config?: {
    generation: { hash: string; loadedAt: string };
    needsRestart: string[];
    lastReload: { trigger: string; at: string; outcome: 'applied' | 'unchanged' | 'invalid' | 'failed'; problems?: string; failures?: string[] } | null;
  };
}

/** `GET /commands`, `/queries`, `/events/catalogue`: one catalogue entry. */
export interface CatalogueItem {
  schema: string;
  version: string;
  dataschema?: string;
  description?: string;
}

/** `GET /subscriptions`: one of the caller's webhook subscriptions. */
export interface Subscription {
  id: string;
  serviceId?: string;
  webhook: { url: string };
  filter?: { types: string[] };
  status: string;
  createdAt: string;
  disabledAt?: string;
  disabledReason?: 'gone' | 'failing';
  failing?: { failures: number; since: string };
  previousSecretExpiresAt?: string;
}

/** `GET /subscriptions/{id}/recoveries/{rid}`: a recovery of a time range. */
export interface Recovery {
  id: string;
  subscriptionId: string;
  since: string;
  until: string;
  status: 'running' | 'completed' | 'failed' | 'cancelled';
  delivered: number;
  position: number;
  endPosition: number;
  gone?: { since: string; until: string };
  error?: string;
  createdAt: string;
  updatedAt: string;
}

/** `GET /subscriptions/{id}/deliveries`: one delivery (no payload). */
export interface Delivery {
  id: string;
  eventId: string;
  eventType: string;
  status: 'pending' | 'in-flight' | 'succeeded' | 'dead';
  attempts: number;
  nextAttemptAt?: string;
  lastError?: string;
  lastStatus?: number;
  createdAt: string;
  updatedAt: string;
}
