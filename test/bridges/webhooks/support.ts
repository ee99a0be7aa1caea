/**
 * Loopback-only helpers of the webhook tests: receivers on 127.0.0.1:0 with scripted answers, a
 * trap server that counts connections (proof that nothing was attempted), a resolver that records
 * its calls and answers from a table (no DNS query ever leaves the process), gateway YAML, and for
 * kill -9 tests a receiver that holds requests and gateway processes delivering to it.
 */
import { writeFileSync } from 'node:fs';
import { createServer as createHttpServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { join } from 'node:path';
import { createServer as createNetServer } from 'node:net';
import type { Resolver, ResolvedAddress } from '../../../src/egress/ssrf-guard.ts';
import { cloudEvent } from '../../log/fixtures/cloud-event.ts';
import { eventually, freePort, tempDir, track } from '../../support/gateway.ts';
import { spawnGateway, type GatewayProcess } from '../../support/process.ts';
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

/** A receiver on 127.0.0.1 that holds every request unanswered until `release()`, then answers 204; it records each arrival's `webhook-id`. */
export async function holdingReceiver() {
  const arrivals: string[] = [];
  const held: ServerResponse[] = [];
  let holding = true;
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      arrivals.push(String(req.headers['webhook-id']));
      if (holding) held.push(res);
      else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return track({
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    arrivals,
    held: () => held.length,
    /** Answers from now on; the held requests too (those of a killed replica have no one left to read the answer). */
    release() {
      holding = false;
      for (const res of held.splice(0)) res.writeHead(204).end();
    },
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  });
}

/** A gateway process on `storage` (YAML flow mapping), following `payments`, delivering webhooks with a 5 s attempt timeout (10 s lease). */
export async function webhookGatewayProcess(storage: string, payments: string): Promise<{ base: string; process: GatewayProcess }> {
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: ${storage}
webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8], timeout: 5s, retry: { schedule: [100ms] } }
backends:
  - { id: payments, kind: proto, url: "${payments}", events: { follow: poll, interval: 100ms } }
`);
  const gateway = spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`)).status === 200, 60_000, 100);
  return { base, process: gateway };
}

/** A replica's `proto_gateway_webhook_claims_total{outcome}` (0 when absent). */
export async function claims(base: string, outcome: string): Promise<number> {
  const text = await (await fetch(`${base}metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`proto_gateway_webhook_claims_total{outcome="${outcome}"}`));
  return line === undefined ? 0 : Number(line.split(' ').at(-1));
}
