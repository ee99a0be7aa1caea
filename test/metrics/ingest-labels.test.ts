import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ingestMetrics, MAX_TYPE_LABELS } from '../../src/metrics/ingest.ts';
import type { StoredEvent } from '../../src/log/EventLog.ts';

const stored = (type: string, position: number) => ({ position, event: { type } }) as unknown as StoredEvent;

describe('ingest metrics', () => {
  it('bounds the type label per backend: types past the limit count as "other"', async () => {
    const registry = new Registry();
    const metrics = ingestMetrics(registry);
    const appended = Array.from({ length: MAX_TYPE_LABELS + 50 }, (_, i) => stored(`Type${i}V1`, i + 1));
    metrics.countAppend('noisy', { appended, duplicates: 0 });
    metrics.countAppend('noisy', { appended: [stored('Type0V1', 999)], duplicates: 0 });
    const [metric] = (await registry.getMetricsAsJSON()).filter((m) => m.name === 'proto_gateway_events_ingested_total');
    const values = metric.values as Array<{ labels: Record<string, string>; value: number }>;
    expect(values).toHaveLength(MAX_TYPE_LABELS + 1);
    expect(values.find((v) => v.labels.type === 'other')?.value).toBe(50);
    expect(values.find((v) => v.labels.type === 'Type0V1')?.value).toBe(2);
  });
});
