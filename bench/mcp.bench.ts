/**
 * The MCP front against the HTTP front it wraps, in one process, in the same run: a gateway (memory
 * store) with the example payments service behind it, one SDK client (`Client` +
 * `StreamableHTTPClientTransport`) and plain `fetch`. Figures, sequential calls:
 * - `send_command` latency (p50, p99) against `POST /commands` with the same envelope;
 * - command-to-event latency (p50): `send_command` until its `notifications/proto/event` arrives,
 *   against `POST /commands` then `GET /events?correlationId=` back to back until the event is there.
 * `--quick`: fewer rounds. Writes `bench/results/mcp.json`.
 *
 * Run: `npx node bench/mcp.bench.ts [--quick]` (BENCH_ROUNDS overrides the rounds).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startPaymentsService } from '../examples/payments-service.ts';
import { startGateway } from '../src/app.ts';
import { parseConfig } from '../src/gateway-config.ts';
import { BenchReport, sized } from './support/report.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? sized(400, 60));
const payment = { orderId: 'ord-bench', amount: 25, currency: 'EUR' };

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function envelope(): Record<string, unknown> {
  return { specversion: '1.0', id: randomUUID(), source: 'urn:bench', type: 'AuthorizePayment', datacontenttype: 'application/json', dataschema: 'authorize-payment/1.0', time: new Date().toISOString(), data: payment };
}

/** Values offered so far, and a wait for one (which may already have come). */
function waiter(): { offer(value: string): void; until(value: string): Promise<void> } {
  const seen = new Set<string>();
  let current: { value: string; resolve: () => void } | undefined;
  return {
    offer: (value) => {
      seen.add(value);
      if (current?.value === value) current.resolve();
    },
    until: (value) => (seen.has(value) ? Promise.resolve() : new Promise<void>((resolve) => (current = { value, resolve }))),
  };
}

async function main(): Promise<void> {
  const payments = await startPaymentsService({ port: 0, resultDelayMs: 0 });
  const yaml = `server: { host: 127.0.0.1, port: 0 }\nstorage: { driver: memory }\ncommands: { dispatch: { timeout: 2s } }\nbackends:\n  - { id: payments, kind: proto, url: ${payments.url}, events: { follow: stream } }\n`;
  const gw = await startGateway(await parseConfig(yaml, `${process.cwd()}/bench-mcp.yaml`, {}), { logger: pino({ level: 'silent' }) });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  const pushed = waiter();
  client.fallbackNotificationHandler = async (n) => pushed.offer(String((n.params as { correlationId: string }).correlationId));
  await client.connect(new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`)));
  await new Promise((r) => setTimeout(r, 500)); // the client's GET stream opens after initialize
  const send = () => client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } });
  const post = () => fetch(`${gw.url}commands`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(envelope()) }).then((r) => r.text());
  for (let i = 0; i < 20; i++) await Promise.all([send(), post()]); // warm-up

  const mcpMs: number[] = [];
  const httpMs: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    let t = performance.now();
    await send();
    mcpMs.push(performance.now() - t);
    t = performance.now();
    await post();
    httpMs.push(performance.now() - t);
  }

  const pushMs: number[] = [];
  const pollMs: number[] = [];
  for (let i = 0; i < Math.ceil(ROUNDS / 4); i++) {
    let t = performance.now();
    const result = await send();
    const { id } = JSON.parse((result.content as Array<{ text: string }>)[0].text) as { id: string };
    await pushed.until(id);
    pushMs.push(performance.now() - t);

    const command = envelope();
    t = performance.now();
    await fetch(`${gw.url}commands`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(command) }).then((r) => r.text());
    // The polling client's best case: GET /events?correlationId= back to back until the event is there.
    for (;;) {
      const page = (await (await fetch(`${gw.url}events?correlationId=${String(command.id)}`)).json()) as { events: unknown[] };
      if (page.events.length > 0) break;
    }
    pollMs.push(performance.now() - t);
  }

  const report = new BenchReport('mcp');
  console.log(`rounds ${ROUNDS}: send_command p50 ${percentile(mcpMs, 50).toFixed(2)} ms, POST /commands p50 ${percentile(httpMs, 50).toFixed(2)} ms`);
  report.add({ name: 'send_command p50', unit: 'ms', gateway: percentile(mcpMs, 50), baseline: percentile(httpMs, 50), baselineName: 'POST /commands', better: 'lower' });
  report.add({ name: 'send_command p99', unit: 'ms', gateway: percentile(mcpMs, 99), baseline: percentile(httpMs, 99), baselineName: 'POST /commands', better: 'lower' });
  report.add({ name: 'command to event p50', unit: 'ms', gateway: percentile(pushMs, 50), baseline: percentile(pollMs, 50), baselineName: 'POST + polling GET /events', better: 'lower' });
  report.write({ rounds: ROUNDS });
  await client.close();
  await gw.close();
  await payments.close();
}

await main();
