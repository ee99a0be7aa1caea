import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';

afterEach(closeAll);

describe('metrics, health and readiness', () => {
  it('exposes process metrics and HTTP metrics labelled by route pattern, never by raw path', async () => {
    const payments = track(await startPaymentsService({ port: 0 }));
    const gw = await startTestGateway(gatewayYaml(`metrics: { public: true }
backends:
  - { id: payments, kind: proto, url: "${payments.url}" }`));
    await fetch(`${gw.url}services/payments/refunds?secret-looking-id=abc123`);
    await fetch(`${gw.url}no/such/path/xyz789`);
    await fetch(`${gw.url}events?limit=0`);
    const text = await (await fetch(`${gw.url}metrics`)).text();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_heap_size_used_bytes');
    expect(text).toMatch(/proto_gateway_http_requests_total\{route="\/services\/:id\/\*",method="GET",status="200"\} 1/);
    expect(text).toMatch(/proto_gateway_http_requests_total\{route="unmatched",method="GET",status="404"\} 1/);
    expect(text).toMatch(/proto_gateway_http_requests_total\{route="\/events",method="GET",status="400"\} 1/);
    expect(text).toMatch(/proto_gateway_http_request_duration_seconds_bucket\{le="0\.005",route="\/services\/:id\/\*",method="GET",status="200"\}/);
    for (const raw of ['refunds', 'abc123', 'xyz789']) expect(text).not.toContain(raw);
    expect(text).toMatch(/proto_gateway_log_events \d+/);
    expect(text).toContain('proto_gateway_ingest_lag_seconds{backend="payments"}');
  });

  it('answers /healthz and /readyz once started', async () => {
    const gw = await startTestGateway(gatewayYaml());
    expect(await getJson(`${gw.url}healthz`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await getJson(`${gw.url}readyz`)).toMatchObject({ status: 200, body: { status: 'ready' } });
  });
});
