/**
 * The server side of the SSE fan-out benchmark, run as a child process of `sse-fanout.bench.ts`
 * (one process per server, so memory is measured on a clean heap): `node servers.ts gateway` or
 * `node servers.ts baseline`. Commands arrive over IPC:
 *
 * - `publish { count, intervalMs }`: publishes `count` events, one every `intervalMs` (0 = back to
 *   back), each carrying its publish time (`data.t`, epoch ms with sub-ms precision);
 * - `memory`: garbage-collects (`--expose-gc`) and reports `process.memoryUsage()` and open streams;
 * - `stop`: closes and exits.
 *
 * The baseline is the minimal SSE broadcaster: `node:http`, a Set of responses, `res.write` of one
 * frame per event. The gateway is the real one (memory store), publishing through `log.append`.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Registry } from 'prom-client';
import { startGateway } from '../../src/app.ts';
import { parseConfig } from '../../src/gateway-config.ts';
import type { CloudEvent } from '../../src/log/EventLog.ts';

/** A server under test: where it listens, how to publish one event, how many streams are open. */
interface BenchServer {
  url: string;
  publish(event: CloudEvent): Promise<void> | void;
  streams(): Promise<number> | number;
  close(): Promise<void>;
}

/** Messages from the orchestrator. */
type Command = { type: 'publish'; count: number; intervalMs: number } | { type: 'memory' } | { type: 'stop' };

/** High-resolution epoch milliseconds, comparable across processes on one machine. */
export function nowMs(): number {
  return performance.timeOrigin + performance.now();
}

/** The minimal broadcaster: what a hand-written Node SSE endpoint does. */
async function startBaseline(): Promise<BenchServer> {
  const clients = new Set<ServerResponse>();
  const server = createServer({ requestTimeout: 0 }, (req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
    res.write('retry: 2000\n\n');
    clients.add(res);
    res.on('close', () => clients.delete(res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    publish(event) {
      const frame = `id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`;
      for (const res of clients) res.write(frame);
    },
    streams: () => clients.size,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The gateway with limits raised for the run, the memory store and a silent logger. */
async function startBenchGateway(): Promise<BenchServer> {
  const yaml = `server: { host: 127.0.0.1, port: 0, shutdownTimeout: 2s }
storage: { driver: memory }
sse: { keepalive: 60s, maxConnections: 100000, maxConnectionsPerPrincipal: 100000 }
events: { retention: { maxEvents: 0, maxAge: 30d } }`;
  const config = await parseConfig(yaml, 'bench.yaml', {});
  const gateway = await startGateway(config, { logger: pino({ level: 'silent' }), registry: new Registry() });
  const gauge = gateway.registry.getSingleMetric('proto_gateway_sse_connections');
  return {
    url: `${gateway.url}events/stream`,
    async publish(event) {
      await gateway.log.append([{ backend: 'bench', event }]);
    },
    streams: async () => (await gauge?.get())?.values[0]?.value ?? 0,
    close: () => gateway.close(),
  };
}

let sequence = 0;

/** A CloudEvent stamped with its publish time. */
function benchEvent(): CloudEvent {
  const seq = sequence++;
  return {
    specversion: '1.0',
    id: `bench-${process.pid}-${seq}`,
    source: 'urn:bench:fanout',
    type: 'FanOutTickV1',
    datacontenttype: 'application/json',
    time: new Date().toISOString(),
    data: { seq, t: nowMs(), note: 'a small payload, about the size of a status change' },
  };
}

/** Publishes `count` events at one per `intervalMs`, on a schedule that does not drift. */
async function publishAll(server: BenchServer, count: number, intervalMs: number): Promise<{ firstAt: number; lastAt: number }> {
  const firstAt = nowMs();
  for (let i = 0; i < count; i++) {
    const due = firstAt + i * intervalMs;
    const wait = due - nowMs();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    await server.publish(benchEvent());
  }
  return { firstAt, lastAt: nowMs() };
}

async function memory(server: BenchServer): Promise<Record<string, number>> {
  const gc = (globalThis as { gc?: () => void }).gc;
  for (let i = 0; i < 3; i++) {
    gc?.();
    await new Promise((resolve) => setImmediate(resolve));
  }
  const usage = process.memoryUsage();
  return { rss: usage.rss, heapUsed: usage.heapUsed, external: usage.external, streams: await server.streams() };
}

async function main(): Promise<void> {
  const kind = process.argv[2];
  const server = kind === 'gateway' ? await startBenchGateway() : await startBaseline();
  const send = (message: object): void => void process.send?.(message);
  process.on('message', async (command: Command) => {
    if (command.type === 'publish') send({ type: 'published', ...(await publishAll(server, command.count, command.intervalMs)) });
    else if (command.type === 'memory') send({ type: 'memory', ...(await memory(server)) });
    else {
      await server.close();
      process.exit(0);
    }
  });
  send({ type: 'listening', url: server.url });
}

await main();
