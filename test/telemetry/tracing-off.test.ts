/**
 * Tracing off (no provider registered in this process, as when neither `telemetry.traces` nor an
 * OTLP variable is set): every instrumented place costs the API's no-op span and nothing else. No
 * attribute, link or name callback runs, no context is entered, no traceparent is made, and the
 * log append leaves events as they are.
 */
import { context } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { appendTraced } from '../../src/log/traced-append.ts';
import { activeTraceparent, inSpan, isTraced, recordDelivery, SpanKind, startDeliverySpan, startSpan, traceparentOf, withSpan } from '../../src/telemetry/tracing.ts';
import { startTracing } from '../../src/telemetry/otlp-tracing.ts';

describe('tracing off', () => {
  it('is off when neither telemetry.traces.endpoint nor an OTLP endpoint variable is set, or when OTEL_SDK_DISABLED is true', async () => {
    expect(startTracing({ traces: undefined, env: {} }).enabled).toBe(false);
    expect(startTracing({ traces: { sampleRatio: 1 }, env: { OTEL_EXPORTER_OTLP_ENDPOINT: '' } }).enabled).toBe(false);
    expect(startTracing({ traces: { endpoint: 'http://127.0.0.1:4318/', sampleRatio: 1 }, env: { OTEL_SDK_DISABLED: 'true' } }).enabled).toBe(false);
    await startTracing({ traces: undefined, env: {} }).shutdown();
  });

  it('computes nothing: no attribute, link or name callback runs, no context is entered, no traceparent is made', async () => {
    const computed: string[] = [];
    const span = startSpan(() => (computed.push('name'), 'x'), {
      kind: SpanKind.INTERNAL,
      attributes: () => (computed.push('attributes'), {}),
      links: () => (computed.push('links'), []),
    });
    expect(span.isRecording()).toBe(false);
    expect(isTraced(span)).toBe(false);
    expect(traceparentOf(span)).toBeUndefined();
    const active = context.active();
    expect(withSpan(span, () => context.active())).toBe(active);
    expect(await inSpan(span, async () => activeTraceparent())).toBeUndefined();
    const delivery = startDeliverySpan('webhook', 'sub-1', () => (computed.push('event'), { id: 'e', type: 't' }), () => (computed.push('extra'), {}));
    delivery.end();
    recordDelivery('sse', 'sse', { id: 'e', type: 't', traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' });
    expect(computed).toEqual([]);
  });

  it('appends events as they came: no traceparent is added', async () => {
    const log = new MemoryEventLog();
    await log.open();
    const event = { specversion: '1.0', id: 'e-1', source: 'urn:x', type: 'ThingHappenedV1', datacontenttype: 'application/json', time: new Date().toISOString(), data: {} };
    const result = await appendTraced(log, [{ event }]);
    expect(result.appended[0]!.event).toEqual(event);
    expect(result.appended[0]!.event.traceparent).toBeUndefined();
  });
});
