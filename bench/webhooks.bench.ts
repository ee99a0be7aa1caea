/**
 * Webhook delivery benchmark: signed deliveries per second through the whole bridge (log append →
 * fan-out → durable SQLite queue → dispatcher → SSRF-checked, address-pinned undici POST with
 * Standard Webhooks headers) to a loopback receiver, against raw undici POSTs of the same bodies
 * with the same number in flight, side by side in one run. Run with `node bench/webhooks.bench.ts`;
 * BENCH_DELIVERIES sets deliveries per scenario (default 5,000, 1,000 with `--quick`; bounded to
 * 100,000). Each scenario is a `ratio` line, written to `bench/results/webhooks.json`.
 *
 * Scenarios: 1 subscription (4 in flight: the per-subscription limit) and 16 subscriptions (64 in
 * flight: the default `webhooks.concurrency`). Loopback only: the receiver listens on 127.0.0.1 and
 * the resolver maps its name there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { Registry } from 'prom-client';
import { Agent, request } from 'undici';
import type { Resolver } from '../src/egress/ssrf-guard.ts';
import { WebhookBridge } from '../src/bridges/webhooks/webhook-bridge.ts';
import type { CloudEvent } from '../src/log/EventLog.ts';
import { SqliteEventLog } from '../src/log/sqlite.ts';
import { webhookMetrics } from '../src/metrics/webhooks.ts';
import { BenchReport, sized } from './support/report.ts';

const DELIVERIES = Math.min(Number(process.env.BENCH_DELIVERIES ?? sized(5_000, 1_000)), 100_000);
const APPEND_BATCH = 100;
const resolver: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];

/** A receiver on 127.0.0.1 answering 204, counting requests; `waitFor(n)` resolves at the n-th. */
async function startReceiver(): Promise<{ server: Server; port: number; count: () => number; waitFor(n: number): Promise<void> }> {
  let count = 0;
  let waiter: { n: number; resolve: () => void } | undefined;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      count += 1;
      res.writeHead(204).end();
      if (waiter && count >= waiter.n) waiter.resolve();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    server,
    port,
    count: () => count,
    waitFor: (n) => (count >= n ? Promise.resolve() : new Promise<void>((resolve) => (waiter = { n: n, resolve }))),
  };
}

function benchEvent(run: string, i: number): CloudEvent {
  return {
    specversion: '1.0', id: `${run}-${i}`, source: 'urn:bench:orders', type: 'OrderPlacedV1', datacontenttype: 'application/json',
    time: new Date().toISOString(), data: { orderId: `o-${i}`, sku: 'ABC-123', qty: 1 + (i % 5), total: 42.5 },
  };
}

/** Deliveries per second through the bridge: `subscriptions` subscriptions, `DELIVERIES` deliveries in all. */
async function bridgeRun(subscriptions: number): Promise<{ perSecond: number; bodies: string[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'pgw-bench-webhooks-'));
  const receiver = await startReceiver();
  const log = new SqliteEventLog(join(dir, 'gateway.db'));
  await log.open();
  const bridge = new WebhookBridge({
    config: { allowPrivateNetworks: ['127.0.0.0/8'], allowHttp: true, retry: { scheduleMs: [1000] }, timeoutMs: 10_000, concurrency: 64, previousSecretKeys: [], maxSubscriptionsPerPrincipal: 100, maxSubscriptions: 10_000, disableAfter: { durationMs: 5 * 86_400_000, failures: 10 }, rotationOverlapMs: 86_400_000, recovery: { perSecond: 50, concurrency: 4 }, rateLimit: { perSecond: 0 } },
    storage: { driver: 'sqlite', path: join(dir, 'gateway.db') } as never,
    log,
    metrics: webhookMetrics(new Registry()),
    logger: pino({ level: 'silent' }),
    isKnownService: () => false,
    resolver,
  });
  await bridge.start();
  for (let s = 0; s < subscriptions; s++) {
    await bridge.subscriptions.create({ id: 'bench', scopes: new Set(['write']) }, { url: `http://receiver.bench:${receiver.port}/hook/${s}`, secret: 'whsec_YmVuY2ggc2VjcmV0IGtleSBvZiAyNCBieXRlcw==' });
  }
  const events = Array.from({ length: Math.ceil(DELIVERIES / subscriptions) }, (_, i) => benchEvent(`run-${subscriptions}`, i));
  const total = events.length * subscriptions;
  const started = performance.now();
  for (let i = 0; i < events.length; i += APPEND_BATCH) await log.append(events.slice(i, i + APPEND_BATCH).map((event) => ({ event })));
  await receiver.waitFor(total);
  const seconds = (performance.now() - started) / 1000;
  await bridge.close();
  await log.close();
  receiver.server.closeAllConnections();
  receiver.server.close();
  rmSync(dir, { recursive: true, force: true });
  return { perSecond: total / seconds, bodies: events.map((e) => JSON.stringify(e)) };
}

/** POSTs per second of the same bodies with raw undici, `inFlight` at once, `DELIVERIES` in all. */
async function rawRun(bodies: string[], inFlight: number): Promise<number> {
  const receiver = await startReceiver();
  const agent = new Agent({ connections: inFlight });
  const url = `http://127.0.0.1:${receiver.port}/hook`;
  let next = 0;
  const worker = async () => {
    while (next < DELIVERIES) {
      const body = bodies[next++ % bodies.length];
      const res = await request(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, dispatcher: agent });
      await res.body.dump();
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: inFlight }, worker));
  const seconds = (performance.now() - started) / 1000;
  await agent.close();
  receiver.server.closeAllConnections();
  receiver.server.close();
  return DELIVERIES / seconds;
}

async function main(): Promise<void> {
  console.log(`webhook deliveries: ${DELIVERIES} per scenario, loopback receiver answering 204\n`);
  console.log('scenario                       bridge (signed, durable)   raw undici POST   ratio (bridge/raw)');
  const bench = new BenchReport('webhooks');
  for (const [subscriptions, inFlight] of [[1, 4], [16, 64]] as const) {
    const bridge = await bridgeRun(subscriptions);
    const raw = await rawRun(bridge.bodies, inFlight);
    const label = `${subscriptions} subscription(s), ${inFlight} in flight`.padEnd(30);
    console.log(`${label} ${bridge.perSecond.toFixed(0).padStart(12)}/s ${raw.toFixed(0).padStart(20)}/s ${(bridge.perSecond / raw).toFixed(3).padStart(16)}`);
    bench.add({ name: `${subscriptions} subscription(s), ${inFlight} in flight`, unit: 'deliveries/s', gateway: bridge.perSecond, baseline: raw, baselineName: 'raw undici POST', better: 'higher' });
  }
  bench.write({ deliveries: DELIVERIES });
}

await main();
