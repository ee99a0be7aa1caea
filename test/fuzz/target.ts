/**
 * The target of the whole-surface fuzz suite: a gateway in its own process (`bin/proto-gateway
 * serve`), with a protocol backend (the payments example) and a legacy backend (the orders
 * example) behind it, API keys, gRPC, MCP and A2A on. CancelOrder and the `order` query carry an
 * `access` list only the writer key holds, so every transport also runs its per-caller catalogue
 * path (hidden for the reader, open for the writer). Tracing is on (spans exported to a loopback
 * OTLP sink that takes and drops them), so every input also goes through the recording path of every
 * span. Its RSS is read from /proc; its exit is watched, so a crash is a finding, not a lost test
 * run. No vitest here: `npm run fuzz` uses it too.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startOrdersService } from '../../examples/orders-service.ts';
import { startPaymentsService } from '../../examples/payments-service.ts';

const launcher = fileURLToPath(new URL('../../bin/proto-gateway', import.meta.url));

/** API keys of the target. */
export const KEYS = { writer: 'fuzz-writer-key', reader: 'fuzz-reader-key' };
/** `server.bodyLimit` of the target, in bytes. */
export const BODY_LIMIT = 16 * 1024;

/** A running target. */
export interface FuzzTarget {
  url: string;
  grpcPort: number;
  child: ChildProcess;
  /** Exit code or signal, once the process has ended. */
  exited(): string | undefined;
  /** Resident set size of the gateway process, in bytes. */
  rss(): number;
  stderr(): string;
  close(): Promise<void>;
}

/** Starts the backends and the gateway; resolves once it logged `listening` and `grpc listening`. */
export async function startFuzzTarget(): Promise<FuzzTarget> {
  const orders = await startOrdersService({ port: 0 });
  const payments = await startPaymentsService({ port: 0 });
  const otlp = createServer((req, res) => void req.resume().on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}')));
  await new Promise<void>((resolve) => otlp.listen(0, '127.0.0.1', resolve));
  const dir = mkdtempSync(join(tmpdir(), 'pgw-fuzz-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: 0, bodyLimit: 16kb, maxJsonDepth: 32 }
storage: { driver: memory }
auth:
  type: apiKey
  queryParam: api_key
  keys:
    - { id: writer, key: ${KEYS.writer}, scopes: [read, write] }
    - { id: reader, key: ${KEYS.reader}, scopes: [read] }
commands: { dispatch: { timeout: 2s, concurrency: 4, retry: { schedule: [100ms] } } }
sse: { maxConnections: 200, keepalive: 1s }
grpc: { host: 127.0.0.1, port: 0 }
mcp: { enabled: true, maxSessions: 200 }
a2a: { settle: 200ms, timeout: 3s }
webhooks: { allowPrivateNetworks: [127.0.0.0/8], allowHttp: true }
telemetry: { traces: { endpoint: "http://127.0.0.1:${(otlp.address() as { port: number }).port}/" } }
backends:
  - id: orders
    kind: legacy
    url: ${orders.url}
    correlationHeader: X-Request-Id
    commands:
      - type: PlaceOrder
        version: "1.0"
        jsonSchema: { type: object, required: [sku, qty], properties: { sku: { type: string, minLength: 1 }, qty: { type: integer, minimum: 1 } } }
        request: { method: POST, path: /orders, body: "data" }
        events: { success: { type: OrderPlacedV1, data: "response" }, failure: { type: PlaceOrderFailedV1 } }
      - type: CancelOrder
        version: "1.0"
        access: [write]
        jsonSchema: { type: object, required: [tenant, orderId], properties: { tenant: { type: string }, orderId: { type: string } } }
        request: { method: POST, path: "/tenants/{data.tenant}/orders/{data.orderId}/cancel" }
    queries:
      - schema: list-orders
        version: "1.0"
        parameters: { type: object, properties: { status: { type: string } } }
        request: { method: GET, path: /orders, query: "params" }
        result: "{ 'orders': response.items }"
      - schema: order
        version: "1.0"
        access: [write]
        parameters: { type: object, required: [tenant, orderId], properties: { tenant: { type: string }, orderId: { type: string } } }
        request: { method: GET, path: "/tenants/{params.tenant}/orders/{params.orderId}" }
  - id: payments
    kind: proto
    url: ${payments.url}
    refresh: 1s
    events: { follow: poll, interval: 200ms }
`);
  const child = spawn(launcher, ['serve', '--config', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, OTEL_BSP_SCHEDULE_DELAY: '200' } });
  let stderr = '';
  let exit: string | undefined;
  child.stderr?.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString('utf8')).slice(-20_000)));
  child.on('exit', (code, signal) => (exit = `code ${code} signal ${signal}`));
  const started = await new Promise<{ url: string; grpcPort: number }>((resolve, reject) => {
    let pending = '';
    let url: string | undefined;
    let grpcPort: number | undefined;
    const timer = setTimeout(() => reject(new Error(`the fuzz target did not start: ${stderr}`)), 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (!line.startsWith('{')) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string; port?: number };
        if (entry.msg === 'grpc listening') grpcPort = entry.port;
        if (entry.msg === 'listening') url = entry.url;
        if (url && grpcPort) {
          clearTimeout(timer);
          resolve({ url, grpcPort });
        }
      }
    });
    child.on('exit', () => reject(new Error(`the fuzz target exited at start: ${stderr}`)));
  });
  return {
    ...started,
    child,
    exited: () => exit,
    rss: () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) * 1024,
    stderr: () => stderr,
    async close() {
      if (exit === undefined) {
        const gone = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGKILL');
        await gone;
      }
      await orders.close();
      await payments.close();
      otlp.closeAllConnections();
      await new Promise((resolve) => otlp.close(resolve));
    },
  };
}
