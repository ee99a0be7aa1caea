/**
 * A legacy REST orders service: plain resources, no protocol. The gateway maps it (DESIGN.md,
 * `kind: legacy`): `POST /orders` becomes the PlaceOrder command, `GET /orders?updatedSince=` is
 * polled into OrderCreatedV1 / OrderShippedV1 events.
 *
 * Routes: `GET /orders?updatedSince=ISO&status=x`, `GET /orders/:id`, `POST /orders` `{ sku, qty }`,
 * `POST /orders/:id/ship`. A sku starting with `fail-` is refused with 422 (to demo failure events).
 *
 * Run it alone: `node examples/orders-service.ts --port 3001`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodyError, closeOnSignal, closer, isObject, listen, optionFromArgv, portFromArgv, readJson, sendJson, serve } from './support/http-kit.ts';

/** An order as the service stores and returns it. Timestamps are ISO 8601 with milliseconds. */
export interface Order {
  id: string;
  sku: string;
  qty: number;
  status: 'created' | 'shipped';
  /** qty × unit price, in EUR. */
  total: number;
  /** The `X-Request-Id` header of the request that created it (the gateway's command id). */
  requestId?: string;
  createdAt: string;
  /** Strictly increasing across all orders, so `updatedSince` polling never misses a change. */
  updatedAt: string;
}

/** Options of `startOrdersService`. */
export interface OrdersServiceOptions {
  /** Port to listen on; 0 (the default) = any free port. */
  port?: number;
  /** Listen address; default `127.0.0.1`. */
  host?: string;
}

/** A running orders service. */
export interface OrdersService {
  /** Base URL, e.g. `http://127.0.0.1:3001` (no trailing `/`). */
  url: string;
  /** The live store, keyed by order id. */
  orders: Map<string, Order>;
  /** Ships an order as `POST /orders/:id/ship` would; throws if it is unknown or already shipped. */
  shipOrder(id: string): Order;
  /** Stops listening and drops connections; safe to call twice. */
  close(): Promise<void>;
}

/** Unit price in EUR of every sku. */
const unitPrice = 12.5;

/** Outcome of a change to the store: the order, or a refusal with its status. */
type Outcome = { status: number; order: Order } | { status: number; message: string };

/** A clock of ISO timestamps that strictly increase (bumped by 1 ms when the clock did not move). */
function monotonicClock(): () => string {
  let last = 0;
  return () => {
    last = Math.max(Date.now(), last + 1);
    return new Date(last).toISOString();
  };
}

/** The orders store and its operations, independent of HTTP. */
function orderStore(now: () => string) {
  const orders = new Map<string, Order>();
  let sequence = 0;

  function create(sku: string, qty: number, requestId?: string): Order {
    const time = now();
    const order: Order = { id: `ord-${++sequence}`, sku, qty, status: 'created', total: qty * unitPrice, requestId, createdAt: time, updatedAt: time };
    orders.set(order.id, order);
    return order;
  }

  function ship(id: string): Outcome {
    const order = orders.get(id);
    if (!order) return { status: 404, message: `order ${id} not found` };
    if (order.status === 'shipped') return { status: 409, message: `order ${id} is already shipped` };
    order.status = 'shipped';
    order.updatedAt = now();
    return { status: 200, order };
  }

  /** Orders updated at or after `since` (inclusive), optionally of one status, oldest change first. */
  function list(since: number, status: string | null): Order[] {
    return [...orders.values()]
      .filter((order) => Date.parse(order.updatedAt) >= since && (status === null || order.status === status))
      .sort((a, b) => Date.parse(a.updatedAt) - Date.parse(b.updatedAt));
  }

  return { orders, create, ship, list };
}

type OrderStore = ReturnType<typeof orderStore>;

/** Why a `POST /orders` body is refused, or undefined when it is a valid `{ sku, qty }`. */
function invalidOrderBody(body: unknown): string | undefined {
  if (!isObject(body)) return 'body must be a JSON object';
  if (typeof body.sku !== 'string' || body.sku === '') return 'sku is required';
  if (typeof body.qty !== 'number' || !Number.isInteger(body.qty) || body.qty < 1) return 'qty must be a positive integer';
  return undefined;
}

function listOrders(store: OrderStore, res: ServerResponse, url: URL): void {
  const updatedSince = url.searchParams.get('updatedSince');
  const since = updatedSince === null ? -Infinity : Date.parse(updatedSince);
  if (Number.isNaN(since)) return sendJson(res, 400, { message: 'updatedSince must be an ISO 8601 time' });
  sendJson(res, 200, { items: store.list(since, url.searchParams.get('status')) });
}

async function placeOrder(store: OrderStore, req: IncomingMessage, res: ServerResponse): Promise<void> {
  let body: unknown;
  try {
    body = await readJson(req);
  } catch (error) {
    if (error instanceof BodyError) return sendJson(res, error.status, { message: error.message });
    throw error;
  }
  const problem = invalidOrderBody(body);
  if (problem) return sendJson(res, 400, { message: problem });
  const { sku, qty } = body as { sku: string; qty: number };
  if (sku.startsWith('fail-')) return sendJson(res, 422, { message: 'out of stock' });
  const requestId = req.headers['x-request-id'];
  sendJson(res, 201, store.create(sku, qty, typeof requestId === 'string' ? requestId : undefined));
}

function answer(res: ServerResponse, outcome: Outcome): void {
  sendJson(res, outcome.status, 'order' in outcome ? outcome.order : { message: outcome.message });
}

/** Routes one request to the store. */
function route(store: OrderStore, req: IncomingMessage, res: ServerResponse, url: URL): void | Promise<void> {
  const parts = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (parts[0] !== 'orders' || parts.length > 3) return sendJson(res, 404, { message: 'not found' });
  const [, id, action] = parts;
  if (id === undefined && req.method === 'GET') return listOrders(store, res, url);
  if (id === undefined && req.method === 'POST') return placeOrder(store, req, res);
  if (id !== undefined && action === undefined && req.method === 'GET') {
    const order = store.orders.get(id);
    return order ? sendJson(res, 200, order) : sendJson(res, 404, { message: `order ${id} not found` });
  }
  if (id !== undefined && action === 'ship' && req.method === 'POST') return answer(res, store.ship(id));
  sendJson(res, 405, { message: 'method not allowed' });
}

/** Two orders present from the start: one created, one shipped. */
function seed(store: OrderStore): void {
  store.create('widget', 2);
  const gadget = store.create('gadget', 1);
  store.ship(gadget.id);
}

/** Starts the orders service with two seeded orders; resolves once it listens. */
export async function startOrdersService(opts: OrdersServiceOptions = {}): Promise<OrdersService> {
  const store = orderStore(monotonicClock());
  seed(store);
  const server = serve((req, res, url) => route(store, req, res, url));
  const url = await listen(server, opts.port ?? 0, opts.host ?? '127.0.0.1');
  return {
    url,
    orders: store.orders,
    shipOrder(id) {
      const outcome = store.ship(id);
      if ('message' in outcome) throw new Error(outcome.message);
      return outcome.order;
    },
    close: closer(server),
  };
}

if (import.meta.main) {
  const service = await startOrdersService({ port: portFromArgv(process.argv, 3001), host: optionFromArgv(process.argv, 'host', '127.0.0.1') });
  console.log(`orders service (legacy REST) listening on ${service.url}`);
  closeOnSignal(service.close);
}
