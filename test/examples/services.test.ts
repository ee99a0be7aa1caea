import { randomUUID } from 'node:crypto';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOrdersService, type Order, type OrdersService } from '../../examples/orders-service.ts';
import { startPaymentsService, type CloudEventLike, type PaymentsService } from '../../examples/payments-service.ts';
import { jsonEvents, readSse } from '../support/sse.ts';

/** GET or POST JSON; resolves status, content type and parsed body. */
async function call(url: string, init: { method?: string; body?: unknown; headers?: Record<string, string> } = {}) {
  const response = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers: { 'content-type': 'application/json', ...init.headers },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await response.text();
  return { status: response.status, type: response.headers.get('content-type') ?? '', body: text ? JSON.parse(text) : undefined };
}

/** Retries `probe` until it returns a value, or fails after `timeoutMs`. */
async function eventually<T>(probe: () => Promise<T | undefined>, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('orders service (legacy REST)', () => {
  let orders: OrdersService;
  beforeAll(async () => {
    orders = await startOrdersService();
  });
  afterAll(() => orders.close());

  it('lists the two seeded orders, oldest change first', async () => {
    const { status, body } = await call(`${orders.url}/orders`);
    expect(status).toBe(200);
    expect(body.items.length).toBeGreaterThanOrEqual(2);
    const times = body.items.map((order: Order) => Date.parse(order.updatedAt));
    expect(times).toEqual([...times].sort((a, b) => a - b));
    expect(orders.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  });

  it('creates an order carrying X-Request-Id as requestId', async () => {
    const created = await call(`${orders.url}/orders`, { body: { sku: 'widget', qty: 3 }, headers: { 'x-request-id': 'cmd-42' } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ sku: 'widget', qty: 3, status: 'created', requestId: 'cmd-42' });
    expect(created.body.total).toBeGreaterThan(0);
    expect(created.body.createdAt).toBe(created.body.updatedAt);
    const fetched = await call(`${orders.url}/orders/${created.body.id}`);
    expect(fetched).toMatchObject({ status: 200, body: created.body });
  });

  it('treats updatedSince as inclusive and filters by status', async () => {
    const created = (await call(`${orders.url}/orders`, { body: { sku: 'bolt', qty: 1 } })).body as Order;
    const since = encodeURIComponent(created.updatedAt);
    const { body } = await call(`${orders.url}/orders?updatedSince=${since}`);
    expect(body.items.map((order: Order) => order.id)).toContain(created.id);
    expect(body.items.every((order: Order) => order.updatedAt >= created.updatedAt)).toBe(true);
    const shipped = await call(`${orders.url}/orders?status=shipped`);
    expect(shipped.body.items.every((order: Order) => order.status === 'shipped')).toBe(true);
  });

  it('ships an order with a strictly later updatedAt', async () => {
    const created = (await call(`${orders.url}/orders`, { body: { sku: 'nut', qty: 2 } })).body as Order;
    const shipped = await call(`${orders.url}/orders/${created.id}/ship`, { method: 'POST' });
    expect(shipped.body.status).toBe('shipped');
    expect(Date.parse(shipped.body.updatedAt)).toBeGreaterThan(Date.parse(created.updatedAt));
    expect((await call(`${orders.url}/orders/${created.id}/ship`, { method: 'POST' })).status).toBe(409);
    const viaHelper = orders.shipOrder((await call(`${orders.url}/orders`, { body: { sku: 'nut', qty: 1 } })).body.id);
    expect(viaHelper.status).toBe('shipped');
  });

  it('keeps updatedAt strictly increasing under quick writes', async () => {
    const created = await Promise.all(Array.from({ length: 10 }, () => call(`${orders.url}/orders`, { body: { sku: 'fast', qty: 1 } })));
    const stamps = created.map(({ body }) => body.updatedAt as string).sort();
    expect(new Set(stamps).size).toBe(stamps.length);
  });

  it('refuses a bad body with 400 and a fail- sku with 422', async () => {
    for (const body of [{ qty: 1 }, { sku: 'x', qty: 0 }, { sku: 'x', qty: 1.5 }, { sku: 'x', qty: '2' }, 'not json']) {
      const answer = await call(`${orders.url}/orders`, { body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.message).toEqual(expect.any(String));
    }
    expect(await call(`${orders.url}/orders`, { body: { sku: 'fail-anvil', qty: 1 } })).toMatchObject({ status: 422, body: { message: 'out of stock' } });
    expect((await call(`${orders.url}/orders/ord-missing`)).status).toBe(404);
  });
});

/** A full command envelope for the payments service. */
function authorize(data: Record<string, unknown>, id = randomUUID()) {
  return { specversion: '1.0', id, source: 'urn:test', type: 'AuthorizePayment', datacontenttype: 'application/json', dataschema: 'authorize-payment/1.0', time: new Date().toISOString(), data };
}

describe('payments service (protocol)', () => {
  let payments: PaymentsService;
  beforeAll(async () => {
    payments = await startPaymentsService({ keepaliveMs: 50 });
  });
  afterAll(() => payments.close());

  it('serves a manifest whose URLs all live under its endpoint', async () => {
    const { status, body } = await call(`${payments.endpoint}.well-known/proto`);
    expect(status).toBe(200);
    expect(Object.keys(body)).toEqual(['PROTO']);
    expect(body.PROTO.version).toBe('1.0.0');
    expect(body.PROTO.authentication).toEqual({ type: 'none' });
    const service = body.PROTO.services['com.example.payments'];
    expect(service).toMatchObject({ version: '1.2.0', http: { endpoint: payments.endpoint }, mcp: { transport: 'http' }, a2a: {} });
    const names = body.PROTO.capabilities.map((capability: { name: string }) => capability.name);
    expect(names).toEqual(['io.proto.agents.commands', 'io.proto.agents.events', 'com.example.payments.refunds']);
    for (const capability of body.PROTO.capabilities) {
      expect(capability.spec.startsWith(payments.endpoint)).toBe(true);
      expect(capability.schema.startsWith(payments.endpoint)).toBe(true);
      expect(capability.service).toBe('com.example.payments');
      expect((await call(capability.schema)).status).toBe(200);
    }
    expect((await call(`${payments.endpoint}.well-known/proto.json`)).body).toEqual(body);
  });

  it('serves its command catalogue and schemas', async () => {
    const { body } = await call(`${payments.endpoint}commands`);
    expect(body.commands.map((entry: { schema: string }) => entry.schema)).toEqual(['authorize-payment', 'refund-payment']);
    const schema = await call(body.commands[0].dataschema);
    expect(schema.type).toBe('application/schema+json');
    expect(schema.body).toMatchObject({ type: 'object', required: ['orderId', 'amount'], produces: ['PaymentAuthorizedV1', 'PaymentDeclinedV1'] });
    const unknown = await call(`${payments.endpoint}commands/nope/1.0`);
    expect(unknown).toMatchObject({ status: 404, body: { error: { code: 'UNKNOWN_SCHEMA' } } });
    expect((await call(`${payments.endpoint}events/payment-authorized/1`)).type).toBe('application/schema+json');
    expect((await call(`${payments.endpoint}events/payment-authorized/9`)).status).toBe(404);
  });

  it('accepts a command with 201 { id } and publishes its result correlated by that id', async () => {
    const command = authorize({ orderId: 'ord-1', amount: 25 });
    expect(await call(`${payments.endpoint}commands`, { body: command })).toMatchObject({ status: 201, body: { id: command.id } });
    const events = await eventually(async () => {
      const { body } = await call(`${payments.endpoint}events?correlationId=${command.id}`);
      return body.events.length ? (body.events as CloudEventLike[]) : undefined;
    });
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      specversion: '1.0',
      type: 'PaymentAuthorizedV1',
      source: payments.endpoint,
      datacontenttype: 'application/json',
      dataschema: `${payments.endpoint}events/payment-authorized/1`,
      correlationid: command.id,
      data: { orderId: 'ord-1', amount: 25, currency: 'EUR' },
    });
    const status = await call(`${payments.endpoint}queries/payment-status?orderId=ord-1`);
    expect(status.body).toEqual({ orderId: 'ord-1', status: 'authorized' });
  });

  it('declines amounts above the limit', async () => {
    const command = authorize({ orderId: 'ord-big', amount: 20_000 });
    await call(`${payments.endpoint}commands`, { body: command });
    const event = await eventually(async () => payments.events.find((candidate) => candidate.correlationid === command.id));
    expect(event.type).toBe('PaymentDeclinedV1');
  });

  it('is idempotent by command id and refuses the same id with another payload', async () => {
    const command = authorize({ orderId: 'ord-idem', amount: 5 });
    expect((await call(`${payments.endpoint}commands`, { body: command })).status).toBe(201);
    expect(await call(`${payments.endpoint}commands`, { body: command })).toMatchObject({ status: 201, body: { id: command.id } });
    const other = await call(`${payments.endpoint}commands`, { body: { ...command, data: { orderId: 'ord-idem', amount: 6 } } });
    expect(other).toMatchObject({ status: 409, body: { error: { code: 'DUPLICATE_COMMAND' } } });
    await eventually(async () => payments.events.find((event) => event.correlationid === command.id));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(payments.events.filter((event) => event.correlationid === command.id)).toHaveLength(1);
  });

  it('refuses bad commands with the protocol error body', async () => {
    const post = (body: unknown) => call(`${payments.endpoint}commands`, { body });
    const { specversion: _dropped, ...noSpecversion } = authorize({ orderId: 'o', amount: 1 });
    expect(await post(noSpecversion)).toMatchObject({ status: 400, body: { error: { code: 'INVALID_ENVELOPE' } } });
    expect(await post('{not json')).toMatchObject({ status: 400, body: { error: { code: 'INVALID_JSON' } } });
    expect(await post({ ...authorize({}), type: 'ChargeCard' })).toMatchObject({ status: 422, body: { error: { code: 'UNKNOWN_COMMAND_TYPE' } } });
    expect(await post({ ...authorize({ orderId: 'o', amount: 1 }), dataschema: 'refund-payment/1.0' })).toMatchObject({
      status: 400,
      body: { error: { code: 'DATASCHEMA_MISMATCH' } },
    });
    const invalid = await post(authorize({ amount: -1 }));
    expect(invalid).toMatchObject({ status: 400, body: { error: { code: 'VALIDATION_FAILED' } } });
    expect(invalid.body.error.details.errors.map((error: { path: string }) => error.path).sort()).toEqual(['/amount', '/orderId']);
  });

  it('pages GET /events with an opaque cursor that is absent on the last page', async () => {
    const emitted = Array.from({ length: 5 }, (_, index) => payments.emit('PageProbeV1', { index }).id);
    const seen: string[] = [];
    const cursors: (string | undefined)[] = [];
    let next: string | undefined;
    do {
      const { body } = await call(`${payments.endpoint}events?type=PageProbeV1&limit=2${next ? `&after=${next}` : ''}`);
      seen.push(...body.events.map((event: CloudEventLike) => event.id));
      next = body.nextCursor;
      cursors.push(next);
    } while (next);
    expect(seen).toEqual(emitted);
    expect(cursors).toHaveLength(3);
    const whole = await call(`${payments.endpoint}events?type=PageProbeV1&limit=5`);
    expect(whole.body.events).toHaveLength(5);
    expect(whole.body).not.toHaveProperty('nextCursor');
    expect((await call(`${payments.endpoint}events?after=bogus`)).body.error.code).toBe('INVALID_CURSOR');
    expect((await call(`${payments.endpoint}events?limit=0`)).body.error.code).toBe('INVALID_PARAMETER');
  });

  it('streams events over SSE with the event id echoed, and replays after Last-Event-ID', async () => {
    const live = await request(`${payments.endpoint}events/stream?type=StreamProbeV1`, { headers: { accept: 'text/event-stream' } });
    expect(live.statusCode).toBe(200);
    expect(live.headers['content-type']).toBe('text/event-stream');
    expect(live.headers['cache-control']).toBe('no-cache');
    payments.emit('OtherProbeV1', {});
    const first = payments.emit('StreamProbeV1', { n: 1 });
    const [record] = jsonEvents(await readSse(live.body, { until: (candidate) => candidate.data !== '' }));
    expect(record.id).toBe(first.id);
    expect(record.json).toEqual(first);

    const second = payments.emit('StreamProbeV1', { n: 2 });
    payments.emit('OtherProbeV1', {});
    const third = payments.emit('StreamProbeV1', { n: 3 }, 'corr-3');
    const resumed = await request(`${payments.endpoint}events/stream?type=StreamProbeV1`, { headers: { 'last-event-id': first.id } });
    const replayed = jsonEvents(await readSse(resumed.body, { until: (_, records) => jsonEvents(records).length === 2 }));
    expect(replayed.map((event) => event.id)).toEqual([second.id, third.id]);
    expect(replayed[1].json.correlationid).toBe('corr-3');
  });

  it('sends keepalive comments on an idle stream', async () => {
    const idle = await request(`${payments.endpoint}events/stream?type=NeverEmittedV1`);
    const records = await readSse(idle.body, { until: (record) => record.comments.includes('keepalive') });
    expect(records.at(-1)).toMatchObject({ data: '', comments: ['keepalive'] });
  });

  it('serves the pass-through targets and test fixtures', async () => {
    expect(await call(`${payments.endpoint}refunds`)).toMatchObject({ status: 200, body: { refunds: [] } });
    expect((await fetch(`${payments.endpoint}docs/refunds`)).headers.get('content-type')).toMatch(/^text\/html/);
    expect((await call(`${payments.endpoint}echo-headers`, { headers: { authorization: 'Bearer x' } })).body.authorization).toBe('Bearer x');
    expect((await call(`${payments.endpoint}slow?ms=20`)).body).toEqual({ waitedMs: 20 });
    const ticks = await request(`${payments.endpoint}sse-ticks?n=3&interval=20`);
    const records = jsonEvents<{ tick: number }>(await readSse(ticks.body));
    expect(records.map((record) => [record.id, record.json.tick])).toEqual([['1', 1], ['2', 2], ['3', 3]]);
  });

  it('answers queries and their catalogue', async () => {
    const { body } = await call(`${payments.endpoint}queries`);
    expect(body.queries).toEqual([expect.objectContaining({ schema: 'payment-status', version: '1.0', dataschema: `${payments.endpoint}queries/payment-status/1.0` })]);
    expect((await call(body.queries[0].dataschema)).body.parameters.required).toEqual(['orderId']);
    expect((await call(`${payments.endpoint}queries/payment-status?orderId=nobody`)).body).toEqual({ orderId: 'nobody', status: 'unknown' });
    expect((await call(`${payments.endpoint}queries/payment-status`)).body.error.code).toBe('INVALID_PARAMETER');
  });
});

describe('payments service under a base path', () => {
  it('serves every route below the base path and advertises it as its endpoint', async () => {
    const payments = await startPaymentsService({ basePath: '/api/v1' });
    try {
      expect(payments.endpoint).toBe(`${payments.url}/api/v1/`);
      const { body } = await call(`${payments.endpoint}.well-known/proto`);
      expect(body.PROTO.services['com.example.payments'].http.endpoint).toBe(payments.endpoint);
      expect((await call(`${payments.url}/.well-known/proto`)).status).toBe(404);
    } finally {
      await payments.close();
      await payments.close();
    }
  });

  it('ends open streams on close', async () => {
    const payments = await startPaymentsService();
    const stream = await request(`${payments.endpoint}events/stream`);
    const reading = readSse(stream.body);
    await payments.close();
    await expect(reading).resolves.toEqual([]);
  });
});
