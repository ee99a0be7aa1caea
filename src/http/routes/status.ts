/**
 * `GET /status` (scope `read`): what an operator's page shows at a glance, as JSON: each service's
 * status, circuit, ingest lag, outbox depth and last error (manifest read or ingestion); the webhook queue by status; and
 * cumulative counters (commands accepted, events appended, webhook deliveries ended, HTTP requests)
 * with the latency histogram of `POST /commands`, so a client that polls it derives rates and a
 * p99 from the differences; and the configuration generation (hash, load time), the settings that
 * need a restart and the last reload's outcome. Every number comes from the same place as `/metrics`: the Prometheus
 * registry, the backends and the outbox; nothing here is counted twice.
 */
import type { MetricObjectWithValues, MetricValue, MetricValueWithName, Registry } from 'prom-client';
import type { BackendDirectory } from '../../backends/directory.ts';
import type { ServiceRegistry } from '../../registry/service-registry.ts';
import { DELIVERY_STATUSES, zeroCounts, type DeliveryStatus } from '../../bridges/webhooks/DeliveryQueue.ts';
import type { Principal, Route } from '../route.ts';

/** What the status is read from. */
export interface StatusOptions {
  registry: Registry;
  services: ServiceRegistry;
  backends: BackendDirectory;
  /** The latest failure of the ingestors of `backend` (no address), undefined when their last run succeeded. */
  ingestError(backend: string): string | undefined;
  /** The number of accepted commands of `backend` not yet delivered. */
  outboxDepth(backend: string): Promise<number>;
  version: string;
  storage: string;
  /** When the gateway started, epoch ms. */
  startedMs: number;
  /** The configuration generation, what needs a restart and the last reload (`config` of the view). */
  config?: () => unknown;
  /** Per-caller catalogues: whether the caller sees a service (a hidden one is not shown); absent = every one. */
  visible?(principal: Principal, serviceId: string): boolean;
}

/** One service as `/status` shows it. */
export interface ServiceStatusView {
  id: string;
  kind: string;
  status: string;
  circuit: { state: string } | null;
  ingest: { lagSeconds: number | null };
  outbox: { depth: number };
  lastError: string | null;
}

/** The routes of the status view. */
export function statusRoutes(options: StatusOptions): Route[] {
  return [{ method: 'GET', path: '/status', handle: async (ctx) => ({ status: 200, body: await readStatus(options, (id) => options.visible?.(ctx.principal, id) ?? true) }) }];
}

/** Reads the status view. */
export async function readStatus(options: StatusOptions, visible: (serviceId: string) => boolean = () => true): Promise<Record<string, unknown>> {
  const metric = async (name: string): Promise<MetricValue<string>[]> => {
    const found = options.registry.getSingleMetric(name);
    return found ? ((await found.get()) as MetricObjectWithValues<MetricValue<string>>).values : [];
  };
  const lag = new Map((await metric('proto_gateway_ingest_lag_seconds')).map((v) => [String(v.labels.backend), v.value]));
  const services: ServiceStatusView[] = await Promise.all(options.services.list().filter((d) => visible(d.id)).map(async (descriptor) => {
    const backend = options.backends.get(descriptor.id);
    return {
      id: descriptor.id,
      kind: backend?.kind ?? descriptor.type ?? 'registered',
      status: descriptor.status,
      circuit: backend ? { state: backend.circuit.state } : null,
      ingest: { lagSeconds: lag.get(descriptor.id) ?? null },
      outbox: { depth: await options.outboxDepth(descriptor.id) },
      // The manifest's failure first (a proto backend whose manifest cannot be read), then ingestion's.
      lastError: (backend?.kind === 'proto' ? backend.lastError : undefined) ?? options.ingestError(descriptor.id) ?? null,
    };
  }));
  const deliveries = zeroCounts();
  for (const v of await metric('proto_gateway_webhook_queue_depth')) {
    if (DELIVERY_STATUSES.includes(v.labels.status as DeliveryStatus)) deliveries[v.labels.status as DeliveryStatus] = v.value;
  }
  const total = async (name: string, match: (labels: MetricValue<string>['labels']) => boolean = () => true) =>
    (await metric(name)).filter((v) => match(v.labels)).reduce((sum, v) => sum + v.value, 0);
  return {
    gateway: { version: options.version, storage: options.storage, uptimeSeconds: Math.round((Date.now() - options.startedMs) / 1000) },
    ...(options.config && { config: options.config() }),
    backends: services,
    webhooks: { deliveries },
    counters: {
      commandsAccepted: await total('proto_gateway_commands_total', (l) => l.outcome === 'accepted'),
      eventsAppended: await total('proto_gateway_log_head_position'),
      webhookDeliveries: await total('proto_gateway_webhook_deliveries_total'),
      httpRequests: await total('proto_gateway_http_requests_total'),
    },
    commandLatency: commandLatency(await metric('proto_gateway_http_request_duration_seconds')),
  };
}

/** The latency histogram of `POST /commands`, summed over statuses: cumulative `[le, count]` pairs, count and sum. */
function commandLatency(values: MetricValue<string>[]): { buckets: Array<[number | '+Inf', number]>; count: number; sum: number } {
  const ofCommands = (values as MetricValueWithName<string>[]).filter((v) => v.labels.route === '/commands' && v.labels.method === 'POST');
  const buckets = new Map<number | '+Inf', number>();
  let count = 0;
  let sum = 0;
  for (const v of ofCommands) {
    if (v.metricName?.endsWith('_bucket')) {
      const le = v.labels.le === '+Inf' ? '+Inf' : Number(v.labels.le);
      buckets.set(le, (buckets.get(le) ?? 0) + v.value);
    } else if (v.metricName?.endsWith('_count')) count += v.value;
    else if (v.metricName?.endsWith('_sum')) sum += v.value;
  }
  const ordered = [...buckets].sort(([a], [b]) => (a === '+Inf' ? 1 : b === '+Inf' ? -1 : a - b));
  return { buckets: ordered, count, sum };
}
