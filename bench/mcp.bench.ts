/**
 * The MCP front against the HTTP front it wraps, measured in the same run: a gateway in its own
 * process (memory store) with the example payments service behind it, driven from this process by
 * a 2026-07-28 client (SDK v2 `@modelcontextprotocol/client`, pinned), a 2025-era client (SDK 1.x,
 * initialize and a session) and plain `fetch`. Figures, sequential calls:
 * - `tools/call` of `send_command` latency (p50, p99) in each era against `POST /commands` with
 *   the same envelope;
 * - command-to-event latency (p50): `send_command` until its `notifications/proto/event` arrives
 *   (2026-07-28: on a `subscriptions/listen` stream; 2025: on the session's GET stream), against
 *   `POST /commands` then `GET /events?correlationId=` back to back until the event is there.
 * `--quick`: fewer rounds. Writes `bench/results/mcp.json`.
 *
 * Run: `npx node bench/mcp.bench.ts [--quick]` (BENCH_ROUNDS overrides the rounds).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startPaymentsService } from '../examples/payments-service.ts';
import { spawnWithUrl, stopAll } from './support/processes.ts';
import { BenchReport, sized } from './support/report.ts';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? sized(400, 60));
const payment = { orderId: 'ord-bench', amount: 25, currency: 'EUR' };
const root = fileURLToPath(new URL('..', import.meta.url));

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
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

/** What both clients do: call a tool, and be told of pushed events. */
interface EraClient {
  callTool(params: { name: string; arguments: Record<string, unknown> }): Promise<unknown>;
}

async function main(): Promise<void> {
  const payments = await startPaymentsService({ port: 0, resultDelayMs: 0 });
  const dir = mkdtempSync(join(tmpdir(), 'bench-mcp-'));
  const file = join(dir, 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: 0 }\nstorage: { driver: memory }\ncommands: { dispatch: { timeout: 2s } }\nbackends:\n  - { id: payments, kind: proto, url: ${payments.url}, events: { follow: stream } }\n`);
  const gateway = `${(await spawnWithUrl(join(root, 'bin/proto-gateway'), ['serve', '--config', file])).url}/`;
  try {
    const pushed = waiter();
    const onEvent = async (n: { method: string; params?: unknown }) => {
      if (n.method === 'notifications/proto/event') pushed.offer(String((n.params as { correlationId: string }).correlationId));
    };
    const modern = new ModernClient({ name: 'bench', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    modern.fallbackNotificationHandler = onEvent;
    await modern.connect(new ModernTransport(new URL(`${gateway}mcp`)));
    const subscription = await modern.listen({ resourceSubscriptions: ['proto-gateway://events/mine'] });
    const legacy = new LegacyClient({ name: 'bench', version: '1.0.0' });
    legacy.fallbackNotificationHandler = onEvent;
    await legacy.connect(new LegacyTransport(new URL(`${gateway}mcp`)));
    await new Promise((r) => setTimeout(r, 500)); // the 1.x client opens its GET stream after initialize

    const send = (client: EraClient) => client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } });
    const post = (command = envelope()) => fetch(`${gateway}commands`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(command) }).then((r) => r.text());
    for (let i = 0; i < 20; i++) await Promise.all([send(modern), send(legacy), post()]); // warm-up

    const calls = { modern: [] as number[], legacy: [] as number[], http: [] as number[] };
    for (let i = 0; i < ROUNDS; i++) {
      for (const [name, run] of [['modern', () => send(modern)], ['legacy', () => send(legacy)], ['http', () => post()]] as const) {
        const t = performance.now();
        await run();
        calls[name].push(performance.now() - t);
      }
    }

    const toEvent = { modern: [] as number[], legacy: [] as number[], poll: [] as number[] };
    for (let i = 0; i < Math.ceil(ROUNDS / 4); i++) {
      for (const name of ['modern', 'legacy'] as const) {
        const t = performance.now();
        const result = (await send(name === 'modern' ? modern : legacy)) as { content: Array<{ text: string }> };
        await pushed.until((JSON.parse(result.content[0]!.text) as { id: string }).id);
        toEvent[name].push(performance.now() - t);
      }
      const command = envelope();
      const t = performance.now();
      await post(command);
      // The polling client's best case: GET /events?correlationId= back to back until the event is there.
      for (;;) {
        const page = (await (await fetch(`${gateway}events?correlationId=${String(command.id)}`)).json()) as { events: unknown[] };
        if (page.events.length > 0) break;
      }
      toEvent.poll.push(performance.now() - t);
    }

    const report = new BenchReport('mcp');
    const p50 = (v: number[]) => percentile(v, 50).toFixed(2);
    console.log(`rounds ${ROUNDS}: send_command p50 2026-07-28 ${p50(calls.modern)} ms, 2025 ${p50(calls.legacy)} ms, POST /commands ${p50(calls.http)} ms`);
    console.log(`command to event p50: push 2026-07-28 ${p50(toEvent.modern)} ms, push 2025 ${p50(toEvent.legacy)} ms, POST + polling ${p50(toEvent.poll)} ms`);
    const vsPost = { baseline: 0, baselineName: 'POST /commands', better: 'lower' as const, unit: 'ms' };
    for (const [era, values] of [['2026-07-28', calls.modern], ['2025', calls.legacy]] as const) {
      report.add({ ...vsPost, name: `tools/call send_command p50 (${era})`, gateway: percentile(values, 50), baseline: percentile(calls.http, 50) });
      report.add({ ...vsPost, name: `tools/call send_command p99 (${era})`, gateway: percentile(values, 99), baseline: percentile(calls.http, 99) });
    }
    for (const [era, values] of [['2026-07-28 listen', toEvent.modern], ['2025 GET stream', toEvent.legacy]] as const) {
      report.add({ name: `command to event p50, push (${era})`, unit: 'ms', gateway: percentile(values, 50), baseline: percentile(toEvent.poll, 50), baselineName: 'POST + polling GET /events', better: 'lower' });
    }
    report.write({ rounds: ROUNDS });
    await subscription.close();
    await modern.close();
    await legacy.close();
  } finally {
    await stopAll();
    await payments.close();
  }
}

await main();
