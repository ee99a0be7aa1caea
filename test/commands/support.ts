/**
 * Helpers of the command tests: envelopes, the YAML of a gateway in front of the example
 * backends, posting commands, and small scripted backends.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { startOrdersService, type OrdersService } from '../../examples/orders-service.ts';
import { startPaymentsService, type PaymentsService } from '../../examples/payments-service.ts';
import { getJson, track } from '../support/gateway.ts';

/** A complete command envelope; `overrides` replace or (with undefined) remove attributes. */
export function envelope(type: string, dataschema: string, data: object, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  const command: Record<string, unknown> = {
    specversion: '1.0',
    id: randomUUID(),
    source: 'urn:test:client',
    type,
    datacontenttype: 'application/json',
    dataschema,
    time: new Date().toISOString(),
    data,
  };
  for (const [key, value] of Object.entries(overrides)) {
    if (value === undefined) delete command[key];
    else command[key] = value;
  }
  return command;
}

/** A PlaceOrder command for the orders service. */
export function placeOrder(data: object = { sku: 'widget', qty: 2 }, overrides: Record<string, unknown> = {}) {
  return envelope('PlaceOrder', 'place-order/1.0', data, overrides);
}

/** An AuthorizePayment command for the payments service. */
export function authorizePayment(data: object = { orderId: 'ord-1', amount: 25, currency: 'EUR' }, overrides: Record<string, unknown> = {}) {
  return envelope('AuthorizePayment', 'authorize-payment/1.0', data, overrides);
}

/** POSTs JSON (or raw text) to `url` with optional headers. */
export function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  return getJson(url, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/** The legacy orders backend block of a gateway YAML (the PlaceOrder mapping of the demo). */
export function ordersBackend(url: string, id = 'orders'): string {
  return `  - id: ${id}
    kind: legacy
    url: ${url}
    source: urn:test:orders
    correlationHeader: X-Request-Id
    commands:
      - type: PlaceOrder
        schema: place-order
        version: "1.0"
        description: Place an order
        jsonSchema:
          type: object
          required: [sku, qty]
          properties:
            sku: { type: string, minLength: 1 }
            qty: { type: integer, minimum: 1 }
        request: { method: POST, path: /orders, body: "data" }
        events:
          success: { type: OrderPlacedV1, data: "response" }
          failure: { type: PlaceOrderFailedV1 }
`;
}

/** A proto backend block of a gateway YAML. */
export function protoBackend(url: string, id = 'payments', extra = ''): string {
  return `  - id: ${id}
    kind: proto
    url: ${url}
    source: urn:test:${id}
    refresh: 200ms
    events: { follow: poll, interval: 100ms }
${extra}`;
}

/** Fast dispatch settings for tests (short timeout and retries). */
export const FAST_DISPATCH = 'commands: { dispatch: { timeout: 1s, concurrency: 4, retry: { schedule: [50ms, 50ms] } } }';

/** Starts the example orders and payments services (closed by closeAll). */
export async function exampleBackends(): Promise<{ orders: OrdersService; payments: PaymentsService }> {
  const orders = track(await startOrdersService({ port: 0 }));
  const payments = track(await startPaymentsService({ port: 0 }));
  return { orders, payments };
}

/** A request a scripted backend received. */
export interface Received {
  method: string;
  url: string;
  headers: IncomingMessage['headers'];
  body: string;
}

/** A loopback HTTP server answering with `handler`, recording every request; closed by closeAll. */
export async function scriptedBackend(handler: (req: Received, res: ServerResponse) => void, port = 0) {
  const received: Received[] = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const chunk of req) body += chunk;
    const record = { method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, body };
    received.push(record);
    handler(record, res);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  server.unref();
  const close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  track({ close });
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, received, close };
}

/** Sends `status` with a JSON body. */
export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

/**
 * A proto backend that publishes one event of `type` correlated with its own id only
 * (`evt-own-<command id>`) for every command, then answers 201 with that own id (`own-<command id>`),
 * after `beforeAnswer` when given.
 */
export async function ownIdBackend(type: string, options: { beforeAnswer?: (own: string) => Promise<void> } = {}) {
  const events: unknown[] = [];
  return scriptedBackend((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/commands' && req.method === 'GET') return sendJson(res, 200, { commands: [{ schema: 'authorize-payment', version: '1.0' }] });
    if (path === '/commands/authorize-payment/1.0') return sendJson(res, 200, { type: 'object' });
    if (path === '/events') return sendJson(res, 200, { events });
    if (path === '/commands' && req.method === 'POST') {
      const own = `own-${JSON.parse(req.body).id}`;
      events.push({ specversion: '1.0', id: `evt-${own}`, source: 'urn:odd', type, datacontenttype: 'application/json', correlationid: own, time: new Date().toISOString(), data: {} });
      // `beforeAnswer` holds the answer (and so the gateway's learning of the alias) back, e.g. until the event was ingested.
      const answer = options.beforeAnswer?.(own) ?? Promise.resolve();
      answer.then(() => sendJson(res, 201, { id: own }), () => res.destroy());
      return;
    }
    sendJson(res, 404, {});
  });
}
