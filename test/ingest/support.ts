/**
 * Shared fixtures of the ingestion tests: a real HTTP server on loopback, a silent logger, fresh
 * metrics, and polling for a condition (tests never assert timings).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pino, type Logger } from 'pino';
import { Registry } from 'prom-client';
import { MemoryEventLog } from '../../src/log/memory.ts';
import { ingestMetrics, type IngestMetrics } from '../../src/metrics/ingest.ts';

/** A loopback server; `requests` lists every request (URL and headers) in arrival order. */
export interface TestServer {
  url: string;
  requests: { url: URL; headers: IncomingMessage['headers'] }[];
  /** Destroys open sockets (streams included) and stops listening. */
  close(): Promise<void>;
  /** Destroys every open socket without stopping the listener (a dropped connection). */
  dropConnections(): void;
}

/** Starts `handler` on 127.0.0.1, port 0. */
export async function startServer(handler: (req: IncomingMessage, res: ServerResponse, url: URL) => void): Promise<TestServer> {
  const requests: TestServer['requests'] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    requests.push({ url, headers: req.headers });
    handler(req, res, url);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    dropConnections: () => server.closeAllConnections(),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers `body` as JSON. */
export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

/** A silent pino logger. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** Fresh metrics on their own registry. */
export function newMetrics(): IngestMetrics {
  return ingestMetrics(new Registry());
}

/** An opened memory log. */
export async function openLog(): Promise<MemoryEventLog> {
  const log = new MemoryEventLog();
  await log.open();
  return log;
}

/** The current value of a counter series (0 when absent). */
export async function counterValue(metric: { get(): Promise<{ values: { value: number; labels: object }[] }> }, labels: Record<string, string>): Promise<number> {
  const { values } = await metric.get();
  const match = values.find((v) => Object.entries(labels).every(([k, l]) => (v.labels as Record<string, unknown>)[k] === l));
  return match?.value ?? 0;
}

/** Resolves once `condition` holds; rejects after `timeoutMs`. */
export async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
