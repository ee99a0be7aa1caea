import type { ServerResponse } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, freePort, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { placeOrder, post, scriptedBackend, sendJson, type Received } from './support.ts';

afterEach(closeAll);

/** A legacy backend mapping with a templated path, a body expression and configured headers. */
function legacyYaml(url: string, dispatch = '{ timeout: 1s, concurrency: 4, retry: { schedule: [50ms, 50ms] } }') {
  return gatewayYaml(`commands: { dispatch: ${dispatch} }
backends:
  - id: shop
    kind: legacy
    url: ${url}
    source: urn:test:shop
    correlationHeader: X-Command-Id
    headers: { X-Backend-Token: secret }
    commands:
      - type: PlaceOrder
        jsonSchema: { type: object, required: [sku, qty], properties: { sku: { type: string }, qty: { type: integer } } }
        request: { method: PUT, path: "/skus/{data.sku}/orders", body: "{ 'quantity': data.qty, 'ref': command.id }" }
        events:
          success: { type: OrderAcceptedV1, data: "{ 'ref': response.ref, 'status': status }" }
`);
}

async function eventsOf(base: string, id: string) {
  return (await getJson(`${base}events?correlationId=${id}`)).body.events as Array<Record<string, any>>;
}

describe('dispatch to a legacy backend', () => {
  it('sends the mapped request with the correlation header, the backend headers and the trace context', async () => {
    const backend = await scriptedBackend((req, res) => sendJson(res, 201, { state: 'accepted', ref: JSON.parse(req.body).ref }));
    const gw = await startTestGateway(legacyYaml(backend.url));
    const command = placeOrder({ sku: 'blue', qty: 2 });
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await post(`${gw.url}commands`, command, { traceparent });
    const [event] = await eventually(async () => ((await eventsOf(gw.url, command.id as string)).length ? eventsOf(gw.url, command.id as string) : undefined));
    const [request] = backend.received;
    expect(request).toMatchObject({ method: 'PUT', url: '/skus/blue/orders' });
    expect(JSON.parse(request.body)).toEqual({ quantity: 2, ref: command.id });
    expect(request.headers).toMatchObject({ 'x-command-id': command.id, 'x-backend-token': 'secret', traceparent, 'content-type': 'application/json' });
    expect(event).toMatchObject({ type: 'OrderAcceptedV1', source: 'urn:test:shop', correlationid: command.id, data: { ref: command.id, status: 201 } });
  });
});

describe('retries', () => {
  it('retries 5xx and 429 (honouring Retry-After), then delivers once', async () => {
    const plan = [503, 429, 201];
    const times: number[] = [];
    const backend = await scriptedBackend((_req, res) => {
      times.push(Date.now());
      const status = plan.shift() ?? 201;
      sendJson(res, status, { state: 'ok' }, status === 429 ? { 'retry-after': '1' } : {});
    });
    const gw = await startTestGateway(legacyYaml(backend.url, '{ timeout: 1s, retry: { schedule: [50ms, 50ms, 50ms] } }'));
    const command = placeOrder();
    await post(`${gw.url}commands`, command);
    await eventually(async () => (await eventsOf(gw.url, command.id as string)).length === 1, 5000);
    expect(backend.received).toHaveLength(3);
    expect(times[2] - times[1]).toBeGreaterThanOrEqual(950);
    const metrics = await (await fetch(`${gw.url}metrics`)).text();
    expect(metrics).toMatch(/proto_gateway_command_retries_total\{backend="shop"\} 2/);
    expect(metrics).toMatch(/proto_gateway_command_dispatch_duration_seconds_count\{backend="shop",outcome="delivered"\} 1/);
  });

  it('after the schedule is exhausted, appends the failure event (default type <Type>FailedV1)', async () => {
    const backend = await scriptedBackend((_req, res) => sendJson(res, 500, { message: 'database down' }));
    const gw = await startTestGateway(legacyYaml(backend.url));
    const command = placeOrder();
    await post(`${gw.url}commands`, command);
    const [event] = await eventually(async () => ((await eventsOf(gw.url, command.id as string)).length ? eventsOf(gw.url, command.id as string) : undefined));
    expect(event).toMatchObject({ type: 'PlaceOrderFailedV1', source: 'urn:test:shop', data: { error: { code: 'BACKEND_UNAVAILABLE', message: 'database down', status: 500 } } });
    expect(backend.received).toHaveLength(3);
    const metrics = await (await fetch(`${gw.url}metrics`)).text();
    expect(metrics).toMatch(/proto_gateway_command_failures_total\{backend="shop"\} 1/);
    expect(metrics).toMatch(/proto_gateway_outbox_depth 0/);
  });

  it('retries an unreachable backend and a timeout, and says which in the failure event', async () => {
    const down = await startTestGateway(legacyYaml(`http://127.0.0.1:${await freePort()}`));
    const unreachable = placeOrder();
    await post(`${down.url}commands`, unreachable);
    const hanging = await scriptedBackend(() => undefined);
    const slow = await startTestGateway(legacyYaml(hanging.url, '{ timeout: 100ms, retry: { schedule: [10ms] } }'));
    const timedOut = placeOrder();
    await post(`${slow.url}commands`, timedOut);
    const [a] = await eventually(async () => ((await eventsOf(down.url, unreachable.id as string)).length ? eventsOf(down.url, unreachable.id as string) : undefined));
    const [b] = await eventually(async () => ((await eventsOf(slow.url, timedOut.id as string)).length ? eventsOf(slow.url, timedOut.id as string) : undefined));
    expect(a.data.error.code).toBe('BACKEND_UNAVAILABLE');
    expect(b.data.error.code).toBe('BACKEND_TIMEOUT');
    expect(hanging.received).toHaveLength(2);
  });
});

describe('concurrency', () => {
  it('keeps at most commands.dispatch.concurrency attempts in flight per backend', async () => {
    const held: ServerResponse[] = [];
    let maxInFlight = 0;
    const backend = await scriptedBackend((_req: Received, res) => {
      held.push(res);
      maxInFlight = Math.max(maxInFlight, held.filter((r) => !r.writableEnded).length);
      setTimeout(() => sendJson(res, 201, { state: 'ok' }), 100);
    });
    const gw = await startTestGateway(legacyYaml(backend.url, '{ timeout: 2s, concurrency: 2 }'));
    const commands = Array.from({ length: 8 }, () => placeOrder());
    for (const command of commands) expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    await eventually(() => backend.received.length === 8, 5000);
    expect(maxInFlight).toBe(2);
  });
});
