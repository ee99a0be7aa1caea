/**
 * OpenTelemetry traces end to end (issue 27, items 6–8), on a spawned gateway exporting over
 * OTLP/HTTP to a receiver written here. One command sent over HTTP to a proto backend, whose event
 * reaches a webhook and an SSE stream, yields the story in spans:
 *
 *   caller's traceparent ─► POST /commands (server) ─► accept payments (producer)
 *   dispatch payments (consumer, new trace, linked to the accept) ─► POST (client; its traceparent reaches the backend)
 *   ingest payments (consumer, new trace, linked to the event's traceparent) ─► append events (producer)
 *   deliver webhook / deliver sse (producer, new traces, linked to the event's trace)
 *
 * An event the backend sent without a traceparent gets the append span's (CloudEvents
 * distributed-tracing extension). With tracing off nothing is exported and events stay as received.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { post, scriptedBackend, sendJson } from '../commands/support.ts';
import { startReceiver } from '../bridges/webhooks/support.ts';
import { closeAll, eventually, freePort, tempDir } from '../support/gateway.ts';
import { spawnGateway } from '../support/process.ts';
import { sseRecords, type SseRecord } from '../support/sse.ts';
import { KIND, one, startOtlpReceiver, traceparentOfSpan, type ExportedSpan, type OtlpReceiver } from './support.ts';

afterEach(closeAll);

const API_KEY = 'k-secret-7f3a9c1d';
const PAYLOAD_MARKER = 'payload-marker-5be1';
const PATH_TOKEN = 'path-token-0c41e2';
const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';
const CALLER_TRACEPARENT = `00-${CALLER_TRACE}-${CALLER_SPAN}-01`;

/**
 * A proto backend: one command type; each command it takes yields two events, the first carrying
 * the `traceparent` the command came with (a backend that continues the trace), the second none.
 */
async function paymentsBackend() {
  const events: Array<Record<string, unknown>> = [];
  const backend = await scriptedBackend((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/commands' && req.method === 'GET') return sendJson(res, 200, { commands: [{ schema: 'authorize-payment', version: '1.0' }] });
    if (path === '/commands/authorize-payment/1.0') return sendJson(res, 200, { type: 'object' });
    // A cursor is the count of events read: each event is handed out once.
    if (path === '/events') {
      const after = Number(new URL(req.url, 'http://backend').searchParams.get('after') ?? 0);
      return sendJson(res, 200, { events: events.slice(after), nextCursor: String(events.length) });
    }
    if (path === '/commands' && req.method === 'POST') {
      const id = String(JSON.parse(req.body).id);
      const base = { specversion: '1.0', source: 'urn:test:payments', datacontenttype: 'application/json', correlationid: id, time: new Date().toISOString(), data: { ok: true } };
      events.push({ ...base, id: `authorized-${id}`, type: 'PaymentAuthorizedV1', traceparent: req.headers.traceparent });
      events.push({ ...base, id: `audited-${id}`, type: 'PaymentAuditedV1' });
      return sendJson(res, 201, { id });
    }
    sendJson(res, 404, {});
  });
  return backend;
}

/** Writes the config and spawns the gateway; resolves once it is ready. */
async function startGatewayProcess(backendUrl: string, telemetry: string, env: NodeJS.ProcessEnv) {
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: memory }
auth:
  type: apiKey
  queryParam: api_key
  keys: [{ id: ops, key: ${API_KEY}, scopes: [read, write, admin] }]
webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8], retry: { schedule: [100ms] } }
${telemetry}
backends:
  - { id: payments, kind: proto, url: "${backendUrl}", refresh: 200ms, events: { follow: poll, interval: 100ms } }
`);
  // No OTLP variable from the test's own environment decides for the gateway.
  const gateway = spawnGateway(file, { OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: '', OTEL_BSP_SCHEDULE_DELAY: '100', ...env });
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`).catch(() => undefined))?.status === 200, 60_000, 100);
  // The backend's catalogue is loaded: the command type is known.
  await eventually(async () => (await fetch(`${base}commands`, { headers: { 'x-api-key': API_KEY } }).then((r) => r.text())).includes('authorize-payment'), 30_000, 100);
  return { base, gateway };
}

/** Opens `GET /events/stream` (key in the query, as EventSource clients send it) and collects its events. */
async function openStream(base: string): Promise<SseRecord[]> {
  const res = await fetch(`${base}events/stream?api_key=${API_KEY}`);
  expect(res.status).toBe(200);
  const records: SseRecord[] = [];
  void (async () => {
    for await (const record of sseRecords(res.body as AsyncIterable<Uint8Array>)) if (record.data) records.push(record);
  })().catch(() => {});
  return records;
}

/** Subscribes a webhook to both event types; returns the subscription id. */
async function subscribeWebhook(base: string, url: string): Promise<string> {
  const res = await fetch(`${base}subscriptions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': API_KEY },
    body: JSON.stringify({ webhook: { url }, filter: { types: ['PaymentAuthorizedV1', 'PaymentAuditedV1'] } }),
  });
  expect(res.status).toBe(201);
  return String(((await res.json()) as { id: string }).id);
}

/** Sends one command over HTTP with the caller's traceparent; returns its id. */
async function sendCommand(base: string): Promise<string> {
  const id = `cmd-${Date.now()}`;
  const command = {
    specversion: '1.0', id, source: 'urn:test:client', type: 'AuthorizePayment', datacontenttype: 'application/json',
    dataschema: 'authorize-payment/1.0', time: new Date().toISOString(), data: { note: PAYLOAD_MARKER },
  };
  const res = await post(`${base}commands`, command, { 'x-api-key': API_KEY, traceparent: CALLER_TRACEPARENT });
  expect(res.status).toBe(201);
  return id;
}

describe('OpenTelemetry traces', () => {
  it('tell the story of a command and its events: request, accept, dispatch, backend call, ingestion, append, and each delivery, with the right parents and links', async () => {
    const otlp = await startOtlpReceiver();
    const backend = await paymentsBackend();
    const hooks = await startReceiver();
    const telemetry = `telemetry: { traces: { endpoint: "${otlp.url}", sampleRatio: 1, headers: { x-otlp-tenant: acme } } }`;
    const { base } = await startGatewayProcess(backend.url, telemetry, {});
    const stream = await openStream(base);
    const subscription = await subscribeWebhook(base, `http://127.0.0.1:${hooks.port}/hook`);
    const id = await sendCommand(base);
    // A pass-through path may carry a token: its span is named by the route pattern only.
    await fetch(`${base}services/payments/reset/${PATH_TOKEN}`, { headers: { 'x-api-key': API_KEY } });

    // Both events reach the webhook and the stream.
    await eventually(() => hooks.requests.length >= 2, 30_000);
    await eventually(() => stream.length >= 2, 30_000);
    const spans = await waitForSpans(otlp, ['deliver webhook', 'deliver sse'], 4);

    // The inbound request: a server span continuing the caller's trace, its route and status, no query string.
    const request = one(spans, (s) => s.name === 'POST /commands', 'the request span');
    expect(request).toMatchObject({ kind: KIND.SERVER, traceId: CALLER_TRACE, parentSpanId: CALLER_SPAN, service: 'proto-gateway' });
    expect(request.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/commands', 'http.response.status_code': 201, 'url.path': '/commands' });

    // The accept: a child of the request, with the command's id, type, backend and outcome.
    const accept = one(spans, (s) => s.name === 'accept payments', 'the accept span');
    expect(accept).toMatchObject({ kind: KIND.PRODUCER, traceId: CALLER_TRACE, parentSpanId: request.spanId });
    expect(accept.attributes).toMatchObject({
      'proto.command.id': id, 'proto.command.type': 'AuthorizePayment', 'proto.backend': 'payments', 'proto.command.outcome': 'accepted',
      'messaging.system': 'proto-gateway', 'messaging.operation': 'send', 'messaging.destination.name': 'payments',
    });

    // The dispatch attempt: a trace of its own, linked to the accept through the outbox entry's traceparent.
    const dispatch = one(spans, (s) => s.name === 'dispatch payments', 'the dispatch span');
    expect(dispatch).toMatchObject({ kind: KIND.CONSUMER, parentSpanId: '' });
    expect(dispatch.traceId).not.toBe(CALLER_TRACE);
    expect(dispatch.links).toEqual([{ traceId: accept.traceId, spanId: accept.spanId }]);
    expect(dispatch.attributes).toMatchObject({ 'proto.command.id': id, 'proto.dispatch.attempt': 1, 'proto.dispatch.outcome': 'delivered', 'messaging.operation': 'process' });

    // The backend call: a client span under the dispatch, whose traceparent the backend received.
    const call = one(spans, (s) => s.kind === KIND.CLIENT && s.traceId === dispatch.traceId, 'the backend call span');
    expect(call).toMatchObject({ name: 'POST', parentSpanId: dispatch.spanId });
    expect(call.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 201, 'server.address': '127.0.0.1' });
    const commandPost = backend.received.find((r) => r.method === 'POST' && r.url === '/commands');
    expect(commandPost?.headers.traceparent).toBe(traceparentOfSpan(call));

    // Ingestion: a trace of its own linked to the trace the backend's event carries; the append is its child.
    const ingest = one(spans, (s) => s.name === 'ingest payments' && s.links.some((l) => l.spanId === call.spanId), 'the ingest span');
    expect(ingest).toMatchObject({ kind: KIND.CONSUMER, parentSpanId: '' });
    expect(ingest.attributes).toMatchObject({ 'messaging.operation': 'receive', 'messaging.destination.name': 'payments' });
    const append = one(spans, (s) => s.name === 'append events' && s.parentSpanId === ingest.spanId, 'the append span');
    expect(append).toMatchObject({ kind: KIND.PRODUCER, traceId: ingest.traceId });

    // Events carry the distributed-tracing extension: the backend's own, or the append's when it sent none.
    const authorized = JSON.parse(stream.find((r) => r.data.includes('PaymentAuthorizedV1'))!.data);
    const audited = JSON.parse(stream.find((r) => r.data.includes('PaymentAuditedV1'))!.data);
    expect(authorized.traceparent).toBe(traceparentOfSpan(call));
    expect(audited.traceparent).toBe(traceparentOfSpan(append));

    // Each delivery: a trace of its own linked to the event's trace; the webhook receiver gets the delivery's traceparent.
    const webhookSpans = spans.filter((s) => s.name === 'deliver webhook');
    expect(webhookSpans).toHaveLength(2);
    for (const span of webhookSpans) {
      expect(span).toMatchObject({ kind: KIND.PRODUCER, parentSpanId: '' });
      expect(span.attributes).toMatchObject({ 'messaging.system': 'proto-gateway', 'messaging.operation': 'send', 'messaging.destination.name': subscription, 'proto.delivery.transport': 'webhook', 'server.address': '127.0.0.1' });
      const event = span.attributes['proto.event.type'] === 'PaymentAuthorizedV1' ? authorized : audited;
      expect(span.attributes['proto.event.id']).toBe(event.id);
      expect(span.links).toEqual([{ traceId: event.traceparent.split('-')[1], spanId: event.traceparent.split('-')[2] }]);
      expect(hooks.requests.map((r) => r.headers.traceparent)).toContain(traceparentOfSpan(span));
    }
    const sseSpans = spans.filter((s) => s.name === 'deliver sse');
    expect(sseSpans.map((s) => s.attributes['proto.event.id']).sort()).toEqual([audited.id, authorized.id].sort());
    for (const span of sseSpans) {
      const event = span.attributes['proto.event.id'] === authorized.id ? authorized : audited;
      expect(span).toMatchObject({ kind: KIND.PRODUCER, parentSpanId: '' });
      expect(span.links).toEqual([{ traceId: event.traceparent.split('-')[1], spanId: event.traceparent.split('-')[2] }]);
    }

    // The configured headers go with every export; no credential, query string or payload is exported.
    expect(otlp.headers.every((h) => h['x-otlp-tenant'] === 'acme')).toBe(true);
    const exported = otlp.bodies.join('\n');
    expect(exported).not.toContain(API_KEY);
    expect(exported).not.toContain('api_key');
    expect(exported).not.toContain(PAYLOAD_MARKER);
    expect(exported).not.toContain(PATH_TOKEN);
    expect(one(spans, (s) => s.name === 'GET /services/:id/*', 'the pass-through span').attributes).toMatchObject({ 'http.route': '/services/:id/*' });
    expect(otlp.strays).toEqual([]);
  }, 120_000);

  it('follows the standard OTEL_EXPORTER_OTLP_ENDPOINT variable when the file has no telemetry section', async () => {
    const otlp = await startOtlpReceiver();
    const backend = await paymentsBackend();
    const { base } = await startGatewayProcess(backend.url, '', { OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url });
    await sendCommand(base);
    const spans = await waitForSpans(otlp, ['accept payments', 'dispatch payments'], 2);
    expect(spans.find((s) => s.name === 'accept payments')?.attributes['proto.command.outcome']).toBe('accepted');
  }, 120_000);

  it('exports nothing when off, and leaves events and the forwarded traceparent as they were', async () => {
    const otlp = await startOtlpReceiver();
    const backend = await paymentsBackend();
    const hooks = await startReceiver();
    const { base } = await startGatewayProcess(backend.url, '', {});
    const stream = await openStream(base);
    await subscribeWebhook(base, `http://127.0.0.1:${hooks.port}/hook`);
    await sendCommand(base);
    await eventually(() => hooks.requests.length >= 2 && stream.length >= 2, 30_000);
    // Well past the export interval (100 ms): an exporter would have sent by now.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(otlp.bodies).toEqual([]);
    expect(otlp.strays).toEqual([]);
    // The caller's traceparent reaches the backend as it was (no span of the gateway in between).
    expect(backend.received.find((r) => r.method === 'POST' && r.url === '/commands')?.headers.traceparent).toBe(CALLER_TRACEPARENT);
    const audited = JSON.parse(stream.find((r) => r.data.includes('PaymentAuditedV1'))!.data);
    expect(audited.traceparent).toBeUndefined();
    expect(hooks.requests.every((r) => r.headers.traceparent === undefined)).toBe(true);
  }, 120_000);
});

/** Waits until the receiver has `count` spans among those named `names` (all of each name present), then a little more for stragglers of the same batch. */
async function waitForSpans(otlp: OtlpReceiver, names: string[], count: number): Promise<ExportedSpan[]> {
  await eventually(() => names.every((name) => otlp.spans.some((s) => s.name === name)) && otlp.spans.filter((s) => names.includes(s.name)).length >= count, 30_000, 100);
  await new Promise((resolve) => setTimeout(resolve, 500));
  return otlp.spans;
}
