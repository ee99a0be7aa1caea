/**
 * An A2A push notification attempt is traced as a webhook attempt is: one `deliver a2a-push`
 * producer span per attempt, its `traceparent` sent to the receiver (which continues the trace),
 * the answer's status recorded, a failed attempt marked with `error.type`; the target's host and
 * port, never its URL or the config's token.
 */
import { TaskState, type StreamResponse, type TaskPushNotificationConfig } from '@a2a-js/sdk';
import { ServerCallContext, type PushNotificationStore } from '@a2a-js/sdk/server';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { GuardedPushSender } from '../../src/bridges/a2a/push-sender.ts';
import type { DeliveryResponse } from '../../src/egress/delivery-client.ts';
import { startTracing, type Tracing } from '../../src/telemetry/otlp-tracing.ts';
import { closeAll, eventually } from '../support/gateway.ts';
import { KIND, startOtlpReceiver } from './support.ts';

let tracing: Tracing | undefined;
afterEach(async () => {
  await closeAll();
  await tracing?.shutdown();
});

const config = { tenant: '', id: 'cfg-1', taskId: 'task-9', url: 'https://receiver.example:8443/hooks/s3cr3t-path', token: 'push-token-value', authentication: undefined } as TaskPushNotificationConfig;
const store: PushNotificationStore = { save: async () => undefined, delete: async () => undefined, load: async () => [config] };

describe('A2A push notification spans', () => {
  it('one producer span per attempt, its traceparent sent, the status recorded, the failed attempt marked', async () => {
    const otlp = await startOtlpReceiver();
    tracing = startTracing({ traces: { endpoint: otlp.url, sampleRatio: 1 }, env: { OTEL_BSP_SCHEDULE_DELAY: '50' } });
    const sent: Array<Record<string, string>> = [];
    const post = async (_url: string, headers: Record<string, string>): Promise<DeliveryResponse> => {
      sent.push(headers);
      return { status: sent.length === 1 ? 503 : 200 } as DeliveryResponse;
    };
    const outcomes: string[] = [];
    const sender = new GuardedPushSender({
      store, post, retryScheduleMs: [10], maxPending: 10, maxPendingPerPrincipal: 10, onOutcome: (outcome) => outcomes.push(outcome), logger: pino({ level: 'silent' }),
    });
    const update = {
      payload: { $case: 'statusUpdate', value: { taskId: 'task-9', contextId: 'ctx', status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined } },
    } as StreamResponse;
    await sender.send(update, new ServerCallContext({ user: { isAuthenticated: true, userName: 'agent' } }));
    await eventually(() => outcomes.includes('delivered'), 5_000);
    sender.close();
    await eventually(() => otlp.spans.filter((span) => span.name === 'deliver a2a-push').length === 2, 10_000, 50);

    const spans = otlp.spans.filter((span) => span.name === 'deliver a2a-push');
    expect(spans.map((span) => span.attributes['proto.delivery.attempt']).sort()).toEqual([1, 2]);
    const [first, second] = [1, 2].map((attempt) => spans.find((span) => span.attributes['proto.delivery.attempt'] === attempt)!);
    for (const span of [first!, second!]) {
      expect(span.kind).toBe(KIND.PRODUCER);
      expect(span.parentSpanId).toBe('');
      expect(span.attributes).toMatchObject({
        'messaging.destination.name': 'task-9', 'proto.delivery.transport': 'a2a-push', 'proto.a2a.update': 'statusUpdate',
        'server.address': 'receiver.example', 'server.port': 8443,
      });
    }
    expect(first!.attributes).toMatchObject({ 'http.response.status_code': 503, 'error.type': '503' });
    expect(second!.attributes['http.response.status_code']).toBe(200);
    expect(second!.attributes['error.type']).toBeUndefined();
    // Each attempt sent its own span's context; the receiver continues that trace.
    expect(sent.map((headers) => headers.traceparent)).toEqual([first, second].map((span) => `00-${span!.traceId}-${span!.spanId}-01`));
    const exported = otlp.bodies.join('\n');
    for (const secret of ['s3cr3t-path', 'push-token-value']) expect(exported).not.toContain(secret);
  });
});
