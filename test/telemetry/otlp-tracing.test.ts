/**
 * The tracing edge (`startTracing`) and the `telemetry` config section: where spans go, how many
 * are kept (`sampleRatio`, a caller's sampled flag winning), and what a hostile `traceparent` or
 * `tracestate` does to a gateway that traces (nothing: a new trace starts, the request is answered).
 */
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/gateway-config.ts';
import { startTracing, tracesUrl, type Tracing } from '../../src/telemetry/otlp-tracing.ts';
import { extractContext, isTraced, SpanKind, startSpan, traceparentOf } from '../../src/telemetry/tracing.ts';
import { closeAll, eventually, gatewayYaml, startTestGateway, tempDir } from '../support/gateway.ts';
import { KIND, startOtlpReceiver } from './support.ts';

let tracing: Tracing | undefined;
afterEach(async () => {
  await closeAll();
  await tracing?.shutdown();
  tracing = undefined;
});

const SAMPLED = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('startTracing', () => {
  it('appends /v1/traces to a receiver base URL unless it is there already', () => {
    expect(tracesUrl('http://127.0.0.1:4318')).toBe('http://127.0.0.1:4318/v1/traces');
    expect(tracesUrl('http://tempo:4318/')).toBe('http://tempo:4318/v1/traces');
    expect(tracesUrl('https://otlp.example.com/tenant-1/v1/traces')).toBe('https://otlp.example.com/tenant-1/v1/traces');
  });

  it('keeps sampleRatio of new traces (0: none), while a caller\'s sampled traceparent is followed', async () => {
    const otlp = await startOtlpReceiver();
    tracing = startTracing({ traces: { endpoint: otlp.url, sampleRatio: 0 }, env: { OTEL_BSP_SCHEDULE_DELAY: '20' } });
    expect(tracing).toMatchObject({ enabled: true, endpoint: `${otlp.url}v1/traces` });
    const fresh = startSpan('fresh', { kind: SpanKind.SERVER });
    // Not recorded, but still a trace: its unsampled context is what backends are told.
    expect(fresh.isRecording()).toBe(false);
    expect(isTraced(fresh)).toBe(true);
    expect(traceparentOf(fresh)).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/);
    fresh.end();
    const continued = startSpan('continued', { kind: SpanKind.SERVER, parent: extractContext({ traceparent: SAMPLED }) });
    expect(continued.isRecording()).toBe(true);
    continued.end();
    await eventually(() => otlp.spans.length > 0);
    expect(otlp.spans.map((s) => s.name)).toEqual(['continued']);
    // Shut down twice: the second is a no-op; afterwards the API is a no-op again.
    await tracing.shutdown();
    await tracing.shutdown();
    expect(isTraced(startSpan('after', { kind: SpanKind.INTERNAL }))).toBe(false);
  });

  it('shuts down cleanly when the receiver is gone: the queued spans are dropped, the shutdown resolves', async () => {
    const otlp = await startOtlpReceiver();
    const url = otlp.url;
    await otlp.close();
    tracing = startTracing({ traces: { endpoint: url, sampleRatio: 1 }, env: {} });
    startSpan('queued', { kind: SpanKind.INTERNAL }).end();
    await expect(tracing.shutdown()).resolves.toBeUndefined();
  });

  it('starts a new trace for a malformed, zeroed, unknown-version or oversized traceparent/tracestate, and answers the request', async () => {
    const otlp = await startOtlpReceiver();
    tracing = startTracing({ traces: { endpoint: otlp.url, sampleRatio: 1 }, env: { OTEL_BSP_SCHEDULE_DELAY: '20' } });
    const gw = await startTestGateway(gatewayYaml());
    const hostile: Array<Record<string, string>> = [
      { traceparent: 'garbage' },
      { traceparent: '00-00000000000000000000000000000000-0000000000000000-01' },
      { traceparent: `00-${'z'.repeat(32)}-${'b'.repeat(16)}-01` },
      { traceparent: `${SAMPLED}-extra-fields` },
      { traceparent: SAMPLED.toUpperCase() },
      { traceparent: 'x'.repeat(16_000) },
      { traceparent: SAMPLED.slice(0, 54), tracestate: 'a=b,'.repeat(4_000) },
    ];
    for (const headers of hostile) {
      const res = await fetch(`${gw.url}events`, { headers });
      expect(res.status, JSON.stringify(headers).slice(0, 80)).toBe(200);
    }
    await eventually(() => otlp.spans.filter((s) => s.name === 'GET /events').length === hostile.length);
    const spans = otlp.spans.filter((s) => s.name === 'GET /events');
    // Every one but the last (a valid traceparent, whatever its tracestate) is a new root; none continues garbage.
    expect(spans.filter((s) => s.parentSpanId === '').length).toBeGreaterThanOrEqual(hostile.length - 2);
    expect(spans.every((s) => s.kind === KIND.SERVER && /^[0-9a-f]{32}$/.test(s.traceId) && s.traceId !== '0'.repeat(32))).toBe(true);
    expect(otlp.bodies.join('')).not.toContain('x'.repeat(100));
  });
});

describe('the telemetry config section', () => {
  const file = () => join(tempDir(), 'gateway.yaml');

  it('defaults sampleRatio to 1 and keeps headers; absent means no section', async () => {
    const config = await parseConfig(gatewayYaml('telemetry: { traces: { endpoint: "http://127.0.0.1:4318/", headers: { x-tenant: acme } } }'), file());
    expect(config.telemetry).toEqual({ traces: { endpoint: 'http://127.0.0.1:4318/', sampleRatio: 1, headers: { 'x-tenant': 'acme' } } });
    expect((await parseConfig(gatewayYaml(), file())).telemetry).toBeUndefined();
  });

  it('refuses a ratio outside 0..1, an endpoint that is no http(s) URL and unknown keys, naming each', async () => {
    const err = await parseConfig(gatewayYaml('telemetry: { traces: { endpoint: "ftp://x", sampleRatio: 1.5, exporter: grpc } }'), file()).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConfigError);
    const messages = (err as ConfigError).problems.map((p) => p.message).join('\n');
    expect(messages).toMatch(/sampleRatio/);
    expect(messages).toMatch(/endpoint/);
    expect(messages).toMatch(/exporter/);
  });
});
