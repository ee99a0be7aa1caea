/**
 * `npm run demo`: the two example backends and a gateway in front of them, in one process.
 *
 * Starts the legacy orders service (port 3001), the protocol-speaking payments service (3002) and
 * the gateway configured by `demo.yaml` (8080), then prints the console's URL and curl commands to try. Ctrl-C (SIGINT)
 * or SIGTERM closes all three and exits 0.
 *
 * Ports: `ORDERS_PORT`, `PAYMENTS_PORT` and `GATEWAY_PORT` override the defaults; the demo applies
 * them to the loaded config, so `demo.yaml` itself stays free of environment variables and still
 * works with `proto-gateway serve --config examples/demo.yaml`.
 */
import { randomUUID } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino from 'pino';
import { startGateway } from '../src/app.ts';
import { loadConfig } from '../src/gateway-config.ts';
import type { GatewayConfig } from '../src/config/types.ts';
import { startOrdersService } from './orders-service.ts';
import { startPaymentsService } from './payments-service.ts';
import { closeOnSignal } from './support/http-kit.ts';

const configFile = fileURLToPath(new URL('./demo.yaml', import.meta.url));

/** A port from the environment variable `name`, else `fallback`. */
function portFromEnv(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === '') return fallback;
  const port = Number(text);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`${name}: not a port number: ${text}`);
  return port;
}

/** Points the config at the services as they listen (the file says 3001 and 3002; port 0 picks any). */
function applyBackendUrls(config: GatewayConfig, urls: Record<string, string>): void {
  for (const backend of config.backends) backend.url = urls[backend.id] ?? backend.url;
}

/** A full CloudEvents command envelope (PROTOCOL-NOTES.md, Commands). */
function commandEnvelope(type: string, dataschema: string, data: object) {
  return { specversion: '1.0', id: randomUUID(), source: 'urn:demo:curl', type, datacontenttype: 'application/json', dataschema, time: new Date().toISOString(), data };
}

/** Where the operator console is and how to sign in to it (nothing printed when `console.enabled` is false). */
function consoleLines(base: string, config: GatewayConfig): string[] {
  if (!config.console.enabled) return [];
  const key = config.auth.keys[0];
  const signIn = config.auth.type === 'none' ? 'no sign-in needed' : key ? `sign in with the key of "${key.id}": ${key.key}` : 'sign in with an API key';
  return ['# the operator console: open it in a browser', `${base}${config.console.path.slice(1)}/  (${signIn})`];
}

/** The lines printed once everything listens. */
function usage(base: string, config: GatewayConfig): string {
  const placeOrder = commandEnvelope('PlaceOrder', 'place-order/1.0', { sku: 'widget', qty: 2 });
  const authorize = commandEnvelope('AuthorizePayment', 'authorize-payment/1.0', { orderId: 'ord-1', amount: 25, currency: 'EUR' });
  const post = (body: object): string => `curl -s -X POST ${base}commands -H 'Content-Type: application/json' -d '${JSON.stringify(body)}'`;
  return [
    '',
    `proto-gateway demo: ${base}`,
    '',
    ...consoleLines(base, config),
    '# the aggregated manifest (every URL is the gateway\'s)',
    `curl -s ${base}.well-known/proto`,
    '# a path only the payments service knows, passed through',
    `curl -s ${base}services/payments/refunds`,
    '# every service behind the gateway: accepts, produces, status',
    `curl -s ${base}services`,
    '# a query of the legacy service, mapped by the gateway (parameters checked against its schema)',
    `curl -s '${base}queries/list-orders?status=created'`,
    '# the one event log (seeded orders show up within a second)',
    `curl -s '${base}events?limit=10'`,
    '# follow the events of the next command live (run in a second terminal first)',
    `curl -N '${base}events/stream?correlationId=${placeOrder.id}'`,
    '# place an order on the legacy service through the protocol',
    post(placeOrder),
    '# authorize a payment on the protocol service',
    post(authorize),
    '',
    'Ctrl-C stops everything.',
    '',
  ].join('\n');
}

/** Starts everything; on failure closes whatever had started and rethrows. */
async function main(): Promise<void> {
  const ports = { gateway: portFromEnv('GATEWAY_PORT', 8080), orders: portFromEnv('ORDERS_PORT', 3001), payments: portFromEnv('PAYMENTS_PORT', 3002) };
  const config = await loadConfig(configFile);
  config.server.port = ports.gateway;
  await mkdir(dirname(config.storage.path), { recursive: true });
  const started: { close(): Promise<void> }[] = [];
  const closeAll = async (): Promise<void> => {
    // The gateway first, so it stops calling backends before they go away.
    for (const component of [...started].reverse()) await component.close();
  };
  try {
    const orders = await startOrdersService({ port: ports.orders });
    started.push(orders);
    const payments = await startPaymentsService({ port: ports.payments });
    started.push(payments);
    applyBackendUrls(config, { orders: orders.url, payments: payments.url });
    // Request lines at info would bury the instructions; LOG_LEVEL=info shows them.
    const gateway = await startGateway(config, { logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }) });
    started.push(gateway);
    closeOnSignal(closeAll);
    console.log(usage(gateway.url.endsWith('/') ? gateway.url : `${gateway.url}/`, config));
  } catch (error) {
    await closeAll();
    throw error;
  }
}

main().catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
