import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startOrdersService } from '../../examples/orders-service.ts';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, tempDir, track } from '../support/gateway.ts';

afterEach(closeAll);

/** Both example backends behind one gateway; the orders records are typed by a schema file. */
async function setup(follow: 'poll' | 'stream' = 'poll') {
  const payments = track(await startPaymentsService({ port: 0, keepaliveMs: 100 }));
  const orders = track(await startOrdersService({ port: 0 }));
  const dir = tempDir();
  writeFileSync(join(dir, 'order-event.json'), JSON.stringify({ type: 'object', required: ['orderId'], properties: { orderId: { type: 'string' } } }));
  const gw = await startTestGateway(
    gatewayYaml(`backends:
  - id: orders
    kind: legacy
    url: "${orders.url}"
    source: urn:acme:orders
    records:
      - path: /orders
        interval: 100ms
        types: [OrderCreatedV1, OrderShippedV1]
        schema: order-event.json
        cursor: { param: updatedSince, field: updatedAt }
        items: items
        event:
          type: "Order{$pascal(status)}V1"
          id: "{id}:{updatedAt}"
          time: updatedAt
          correlation: requestId
          data: "{ 'orderId': id, 'status': status, 'total': total }"
  - id: payments
    kind: proto
    url: "${payments.url}"
    events: { follow: ${follow}, interval: 100ms }`),
    {},
    join(dir, 'gateway.yaml'),
  );
  return { gw, payments, orders };
}

const byType = async (url: string, type: string) => (await getJson(`${url}events?type=${type}&limit=1000`)).body.events;

describe('one log from both kinds of backend', () => {
  for (const follow of ['poll', 'stream'] as const) {
    it(`ingests a proto backend's events (${follow}) with backend addresses rewritten to the public form`, async () => {
      const { gw, payments } = await setup(follow);
      const emitted = payments.emit('PaymentAuthorizedV1', { orderId: 'o-1', amount: 5 }, 'cmd-1');
      const [stored] = await eventually(async () => {
        const { events } = (await getJson(`${gw.url}events?correlationId=cmd-1`)).body;
        return events.length > 0 && events;
      });
      expect(stored).toMatchObject({ id: emitted.id, type: 'PaymentAuthorizedV1', correlationid: 'cmd-1', data: emitted.data, time: emitted.time });
      expect(stored.source).toBe(`${gw.url}services/payments/`);
      expect(stored.dataschema).toBe(`${gw.url}services/payments/events/payment-authorized/1`);
      expect(JSON.stringify(stored)).not.toContain(new URL(payments.url).host);
      const scoped = (await getJson(`${gw.url}services/payments/events`)).body.events;
      expect(scoped.map((e: { id: string }) => e.id)).toEqual([emitted.id]);
    });
  }

  it('maps legacy records to typed events, once each, however often they are re-polled', async () => {
    const { gw, orders } = await setup();
    const created = await eventually(async () => (await byType(gw.url, 'OrderCreatedV1')).length === 1 && byType(gw.url, 'OrderCreatedV1'));
    expect(created[0]).toMatchObject({
      source: 'urn:acme:orders',
      dataschema: `${gw.url}events/order-created/1`,
      data: { orderId: 'ord-1', status: 'created' },
    });
    expect(created[0].id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-/);
    const before = (await getJson(`${gw.url}events?limit=1000`)).body.events.length;
    await new Promise((r) => setTimeout(r, 600));
    expect((await getJson(`${gw.url}events?limit=1000`)).body.events.length).toBe(before);
    orders.shipOrder('ord-1');
    await eventually(async () => (await byType(gw.url, 'OrderShippedV1')).some((e: { data: { orderId: string } }) => e.data.orderId === 'ord-1'));
    await new Promise((r) => setTimeout(r, 400));
    const shipped = (await byType(gw.url, 'OrderShippedV1')).filter((e: { data: { orderId: string } }) => e.data.orderId === 'ord-1');
    expect(shipped).toHaveLength(1);
  });

  it('lists event types in the catalogue and serves their schemas', async () => {
    const { gw, payments } = await setup();
    payments.emit('PaymentAuthorizedV1', { orderId: 'o-2', amount: 7 });
    const catalogue = await eventually(async () => {
      const { body } = await getJson(`${gw.url}events/catalogue`);
      // Listed untyped from the command catalogue's `produces` at once; typed once a typed event arrived.
      return body.events.some((e: { schema: string; dataschema?: string }) => e.schema === 'payment-authorized' && e.dataschema) && body.events;
    });
    expect(catalogue).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ schema: 'order-created', version: '1', dataschema: `${gw.url}events/order-created/1` }),
        expect.objectContaining({ schema: 'order-shipped', version: '1' }),
        expect.objectContaining({ schema: 'payment-authorized', version: '1', dataschema: `${gw.url}events/payment-authorized/1` }),
      ]),
    );
    const legacySchema = await fetch(`${gw.url}events/order-created/1`);
    expect(legacySchema.headers.get('content-type')).toBe('application/schema+json');
    expect(await legacySchema.json()).toMatchObject({ required: ['orderId'] });
    const protoSchema = await getJson(`${gw.url}events/payment-authorized/1`);
    expect(protoSchema.status).toBe(200);
    expect(JSON.stringify(protoSchema.body)).not.toContain(new URL(payments.url).host);
    const unknown = await getJson(`${gw.url}events/no-such-thing/1`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('UNKNOWN_SCHEMA');
    const scoped = (await getJson(`${gw.url}services/orders/events/catalogue`)).body.events;
    expect(scoped.map((e: { schema: string }) => e.schema).sort()).toEqual(['order-created', 'order-shipped']);
  });
});
