/**
 * Loopback-only helpers of the webhook tests: receivers on 127.0.0.1:0 with scripted answers, a
 * trap server that counts connections (proof that nothing was attempted), a resolver that records
 * its calls and answers from a table (no DNS query ever leaves the process), and gateway YAML.
 */
import { createServer as createHttpServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { Resolver, ResolvedAddress } from '../../../src/bridges/webhooks/ssrf-guard.ts';
import { cloudEvent } from '../../log/fixtures/cloud-event.ts';
import { track } from '../../support/gateway.ts';
import type { Gateway } from '../../../src/app.ts';

/** A request a receiver got. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers one request: a status, optional headers; may wait first. */
export type Answer = (req: ReceivedRequest, n: number) => { status: number; headers?: Record<string, string>; delayMs?: number };

/** A loopback receiver: every request recorded, answered by `answer` (default 204). */
export interface Receiver {
  port: number;
  /** `http://receiver.test:{port}{path}`: a name the test resolver maps to 127.0.0.1. */
  url(path?: string): string;
  requests: ReceivedRequest[];
  answer: Answer;
  close(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1:0 (closed by `closeAll`). */
export async function startReceiver(answer: Answer = () => ({ status: 204 })): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const receiver = { requests, answer } as Receiver;
  const server = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      requests.push(request);
      reply(res, receiver.answer(request, requests.length));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.port = (server.address() as { port: number }).port;
  receiver.url = (path = '/hook') => `http://receiver.test:${receiver.port}${path}`;
  receiver.close = () => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });
  return track(receiver);
}

function reply(res: ServerResponse, answer: ReturnType<Answer>): void {
  const send = () => res.writeHead(answer.status, answer.headers).end();
  if (answer.delayMs) setTimeout(send, answer.delayMs);
  else send();
}

/** A TCP server on 127.0.0.1:0 that counts connections and closes them at once. */
export async function startTrap(): Promise<{ port: number; connections: () => number; close(): Promise<void> }> {
  let connections = 0;
  const server = createNetServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return track({ port, connections: () => connections, close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
}

/** A resolver answering from `table` (name → addresses; a missing name does not resolve), recording every call. */
export function tableResolver(table: Record<string, string[]>): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver = async (hostname: string): Promise<ResolvedAddress[]> => {
    calls.push(hostname);
    const addresses = table[hostname.toLowerCase()];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolver, { calls });
}

/** `webhooks` YAML for loopback receivers: http allowed, 127.0.0.0/8 exempted, a short retry schedule. */
export function webhooksYaml(schedule = '[100ms, 200ms]', extra = ''): string {
  return `webhooks:\n  allowHttp: true\n  allowPrivateNetworks: [127.0.0.0/8]\n  retry: { schedule: ${schedule} }\n  timeout: 2s\n${extra}`;
}

/** Appends events of the given types to the gateway's log; returns their ids. */
export async function appendEvents(gw: Gateway, ...types: string[]): Promise<string[]> {
  const events = types.map((type, i) => cloudEvent(`evt-${Date.now()}-${Math.random().toString(36).slice(2)}-${i}`, { type }));
  await gw.log.append(events.map((event) => ({ event })));
  return events.map((e) => e.id);
}

/** POSTs a subscription; returns status and body. */
export async function subscribe(gw: Gateway, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(`${gw.url}subscriptions`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : undefined };
}

/** The value of a metric series in the gateway's registry (0 when absent). */
export async function metricValue(gw: Gateway, name: string, labels: Record<string, string> = {}): Promise<number> {
  const metric = (await gw.registry.getMetricsAsJSON()).find((m) => m.name === name);
  const series = (metric?.values ?? []).find((v) => Object.entries(labels).every(([k, val]) => v.labels[k] === val));
  return series?.value ?? 0;
}
