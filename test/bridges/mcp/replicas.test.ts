/**
 * The MCP front on two gateway processes sharing one Redis: no request needs the replica that
 * served the one before (no session affinity), and pushed events reach the client wherever its
 * stream is held.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as LegacyTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterEach, describe, expect, it } from 'vitest';
import { startPaymentsService } from '../../../examples/payments-service.ts';
import { MY_EVENTS_URI } from '../../../src/bridges/mcp/mcp-resources.ts';
import { FAST_DISPATCH, protoBackend } from '../../commands/support.ts';
import { closeAll, eventually, freePort, tempDir, track } from '../../support/gateway.ts';
import { spawnGateway } from '../../support/process.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../../support/redis.ts';
import { KEY, toolJson } from './support.ts';

afterEach(closeAll);

const payment = { orderId: 'ord-r', amount: 25, currency: 'EUR' };
const headers = { 'X-API-Key': KEY };

/** Spawns a replica on the shared Redis under `prefix`; resolves with its base URL once ready. */
async function replica(prefix: string, paymentsUrl: string): Promise<string> {
  const port = await freePort();
  const file = join(tempDir(), 'gateway.yaml');
  writeFileSync(file, `server: { host: 127.0.0.1, port: ${port} }
storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }
${FAST_DISPATCH}
auth:
  type: apiKey
  keys:
    - { id: agent, key: ${KEY}, scopes: [read, write] }
backends:
${protoBackend(paymentsUrl)}`);
  spawnGateway(file);
  const base = `http://127.0.0.1:${port}/`;
  await eventually(async () => (await fetch(`${base}readyz`).catch(() => undefined))?.status === 200, 60_000, 100);
  return base;
}

async function twoReplicas(): Promise<[string, string]> {
  const prefix = randomPrefix();
  track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
  const payments = track(await startPaymentsService({ port: 0 }));
  return Promise.all([replica(prefix, payments.url), replica(prefix, payments.url)]);
}

/** A fetch that sends each request to the replica `pick` chooses (the URL's origin is replaced). */
function routed(pick: (method: string) => string, seen: string[]): typeof fetch {
  return (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const base = new URL(pick(init?.method ?? 'GET'));
    url.protocol = base.protocol;
    url.host = base.host;
    seen.push(`${init?.method ?? 'GET'} ${base.port}`);
    return fetch(url, init);
  };
}

describe('MCP on two gateway processes sharing Redis', () => {
  it('a 2026-07-28 client alternating between the replicas calls every tool and gets its events on a listen stream held by either', async () => {
    const [a, b] = await twoReplicas();
    let turn = 0;
    const seen: string[] = [];
    const client = new Client({ name: 'alternating', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const pushed: any[] = [];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/proto/event') pushed.push(n.params);
    };
    await client.connect(new StreamableHTTPClientTransport(new URL(`${a}mcp`), { requestInit: { headers }, fetch: routed(() => (turn++ % 2 === 0 ? a : b), seen) }));
    track({ close: () => client.close() });
    const subscription = await client.listen({ resourceSubscriptions: [MY_EVENTS_URI] });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      ids.push(toolJson(await client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } })).id);
    }
    expect(new Set(seen.map((s) => s.split(' ')[1])).size).toBe(2);
    await eventually(() => ids.every((id) => pushed.some((p) => p.correlationId === id)), 30_000);
    for (const name of ['get_command_catalogue', 'get_query_catalogue', 'get_manifest']) {
      expect((await client.callTool({ name, arguments: {} })).isError).toBeFalsy();
    }
    await subscription.close();
  }, 120_000);

  it('a 2025-era (1.x) client whose GET stream is on B while its send_command went to A still gets the push', async () => {
    const [a, b] = await twoReplicas();
    const seen: string[] = [];
    const client = new LegacyClient({ name: 'legacy', version: '1.0.0' });
    const pushed: any[] = [];
    client.fallbackNotificationHandler = async (n) => {
      if (n.method === 'notifications/proto/event') pushed.push(n.params);
    };
    const transport = new LegacyTransport(new URL(`${a}mcp`), { requestInit: { headers }, fetch: routed((method) => (method === 'GET' ? b : a), seen) });
    await client.connect(transport);
    track({ close: () => client.close() });
    await eventually(async () => /proto_gateway_mcp_push_streams 1/.test(await (await fetch(`${b}metrics`, { headers })).text()), 30_000);
    const { id } = toolJson(await client.callTool({ name: 'send_command', arguments: { schema: 'authorize-payment', version: '1.0', data: payment } }));
    const [event] = await eventually(() => (pushed.length > 0 ? pushed : undefined), 30_000);
    expect(event).toMatchObject({ correlationId: id, event: { type: 'PaymentAuthorizedV1', correlationid: id } });
    expect(seen).toContain(`GET ${new URL(b).port}`);
    expect(seen.filter((s) => s.startsWith('POST')).every((s) => s === `POST ${new URL(a).port}`)).toBe(true);
    // The session is known to both: B counts it too.
    expect(await (await fetch(`${b}metrics`, { headers })).text()).toMatch(/proto_gateway_mcp_sessions 1/);
  }, 120_000);
});
