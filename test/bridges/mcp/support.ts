/**
 * Helpers of the MCP front tests: a gateway with the example payments service behind it and API
 * keys, and SDK clients that record the `notifications/proto/event` pushed to them: the 1.x client
 * (`@modelcontextprotocol/sdk`, the 2025 era: initialize, a session, its GET stream) and the v2
 * client (`@modelcontextprotocol/client` pinned to 2026-07-28: stateless, `subscriptions/listen`).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ModernSdkClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import type { Gateway } from '../../../src/app.ts';
import { exampleBackends, FAST_DISPATCH, protoBackend } from '../../commands/support.ts';
import { eventually, gatewayYaml, startTestGateway, track } from '../../support/gateway.ts';
import { metricValue } from '../sse/support.ts';

/** The key of every test client (scopes read and write); `READER_KEY` has read only. */
export const KEY = 'mcp-test-key';
export const READER_KEY = 'mcp-reader-key';

/** A gateway with the payments example behind it, API keys on, and `mcp` settings added. */
export async function mcpGateway(mcp = '') {
  const { payments } = await exampleBackends();
  const yaml = gatewayYaml(`${FAST_DISPATCH}
auth:
  type: apiKey
  keys:
    - { id: agent, key: ${KEY}, scopes: [read, write] }
    - { id: reader, key: ${READER_KEY}, scopes: [read] }
mcp: { enabled: true${mcp} }
backends:
${protoBackend(payments.url)}`);
  const gw = await startTestGateway(yaml);
  return { gw, payments };
}

/** A connected MCP client and the events pushed to its session. */
export interface TestClient {
  client: Client;
  transport: StreamableHTTPClientTransport;
  pushed: Array<{ correlationId: string; event: Record<string, any> }>;
}

/** Connects an SDK client to `{gateway}mcp` with `headers`; waits for its notification stream when `listen`. */
export async function connect(gw: Gateway, headers: Record<string, string> = { 'X-API-Key': KEY }, listen = true): Promise<TestClient> {
  const before = listen ? await metricValue(gw, 'proto_gateway_mcp_push_streams') : 0;
  const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { requestInit: { headers } });
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  const pushed: TestClient['pushed'] = [];
  client.fallbackNotificationHandler = async (notification) => {
    if (notification.method === 'notifications/proto/event') pushed.push(notification.params as TestClient['pushed'][number]);
  };
  await client.connect(transport);
  track({ close: () => client.close() });
  // The client opens its GET stream after initialize; pushes before that would have nowhere to go.
  if (listen) await eventually(async () => (await metricValue(gw, 'proto_gateway_mcp_push_streams')) > before);
  return { client, transport, pushed };
}

/** The parsed JSON of a successful tool call's text. */
export function toolJson(result: any): any {
  if (result.isError) throw new Error(`tool error: ${toolText(result)}`);
  return JSON.parse(toolText(result));
}

/** The text of a tool call's first content item. */
export function toolText(result: any): string {
  return (result.content as Array<{ text: string }>)[0].text;
}

/** A 2026-07-28 client (SDK v2, pinned: no `initialize`, no session) and the events pushed on its listen streams. */
export interface ModernClient {
  client: ModernSdkClient;
  pushed: Array<{ correlationId: string; event: Record<string, any> }>;
}

/** Connects an SDK v2 client pinned to 2026-07-28 to `{url}mcp` (no handshake: it sends `server/discover`). */
export async function connectModern(url: string, headers: Record<string, string> = { 'X-API-Key': KEY }): Promise<ModernClient> {
  const client = new ModernSdkClient({ name: 'mcp-test-modern', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const pushed: ModernClient['pushed'] = [];
  client.fallbackNotificationHandler = async (notification) => {
    if (notification.method === 'notifications/proto/event') pushed.push(notification.params as ModernClient['pushed'][number]);
  };
  await client.connect(new ModernTransport(new URL(`${url}mcp`), { requestInit: { headers } }));
  track({ close: () => client.close() });
  return { client, pushed };
}
