/**
 * The edge of tracing: the OpenTelemetry SDK and its OTLP/HTTP exporter, wired once at start-up by
 * `main.ts` (the one module that imports them; the rest of the gateway writes spans against
 * `@opentelemetry/api` through `tracing.ts`).
 *
 * On when `telemetry.traces.endpoint` is set, or the standard `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`
 * or `OTEL_EXPORTER_OTLP_ENDPOINT` variable is (the exporter reads those and
 * `OTEL_EXPORTER_OTLP_*_HEADERS`, `_TIMEOUT`, `_COMPRESSION` itself); `OTEL_SDK_DISABLED=true`
 * turns it off. Off, nothing is registered and every span is the API's no-op.
 *
 * Spans go out in batches (`BatchSpanProcessor`: at most 2048 queued, then dropped; every 5 s, or
 * `OTEL_BSP_SCHEDULE_DELAY` ms); `shutdown()` sends what is queued.
 */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor, ParentBasedSampler, TraceIdRatioBasedSampler, TracerProvider } from '@opentelemetry/sdk-trace';
import type { TracesConfig } from '../config/types.ts';
import { GATEWAY_VERSION } from '../version.ts';
import { safeUrl } from './tracing.ts';

/** The OTLP/HTTP path of traces under a receiver's base URL. */
const TRACES_PATH = 'v1/traces';

/** How long `shutdown()` waits for the last export, in ms. */
export const SHUTDOWN_FLUSH_MS = 2_000;

/** Tracing as started: whether it is on, and how to flush and stop it. */
export interface Tracing {
  enabled: boolean;
  /** Where spans go (no query string), when on. */
  endpoint?: string;
  /** Sends the spans still queued (within `SHUTDOWN_FLUSH_MS`; a failed export is dropped, never thrown) and stops. Idempotent. */
  shutdown(): Promise<void>;
}

/** What decides whether tracing is on. */
export interface TracingSetup {
  /** `telemetry.traces`; absent = only the environment decides. */
  traces: TracesConfig | undefined;
  env: NodeJS.ProcessEnv;
  /** `service.name` of the resource; default `proto-gateway` (`OTEL_SERVICE_NAME` wins). */
  serviceName?: string;
}

/** Starts the SDK when traces are configured (see the file comment); otherwise registers nothing. */
export function startTracing(setup: TracingSetup): Tracing {
  const { traces, env } = setup;
  const fromEnv = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true' || (!traces?.endpoint && !fromEnv)) {
    return { enabled: false, shutdown: async () => {} };
  }
  const url = traces?.endpoint ? tracesUrl(traces.endpoint) : undefined;
  const exporter = new OTLPTraceExporter({ ...(url !== undefined && { url }), ...(traces?.headers && { headers: traces.headers }) });
  const provider = new TracerProvider({
    resource: resourceFromAttributes({ 'service.name': env.OTEL_SERVICE_NAME || setup.serviceName || 'proto-gateway', 'service.version': GATEWAY_VERSION }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(traces?.sampleRatio ?? 1) }),
    spanProcessors: [new BatchSpanProcessor({ exporter, ...scheduleOf(env) })],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  let stopping: Promise<void> | undefined;
  return {
    enabled: true,
    ...withEndpoint(safeUrl(url ?? String(fromEnv))),
    shutdown() {
      // A receiver that is down or slow must neither fail nor hold up the gateway's shutdown (the
      // exporter retries for up to its timeout): the spans still queued are lost, nothing else.
      stopping ??= Promise.race([provider.shutdown().catch(() => {}), delay(SHUTDOWN_FLUSH_MS)]).finally(() => {
        trace.disable();
        propagation.disable();
        context.disable();
      });
      return stopping;
    },
  };
}

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** `OTEL_BSP_SCHEDULE_DELAY` (ms between two exports), when set to a positive integer. */
function scheduleOf(env: NodeJS.ProcessEnv): { scheduledDelayMillis?: number } {
  const delay = Number(env.OTEL_BSP_SCHEDULE_DELAY);
  return Number.isInteger(delay) && delay > 0 ? { scheduledDelayMillis: delay } : {};
}

function withEndpoint(endpoint: string | undefined): { endpoint?: string } {
  return endpoint === undefined ? {} : { endpoint };
}

/** The traces URL of an OTLP/HTTP receiver: `endpoint` itself when it ends in `/v1/traces`, else that path appended. */
export function tracesUrl(endpoint: string): string {
  if (/\/v1\/traces\/?$/.test(new URL(endpoint).pathname)) return endpoint;
  return endpoint.endsWith('/') ? `${endpoint}${TRACES_PATH}` : `${endpoint}/${TRACES_PATH}`;
}
