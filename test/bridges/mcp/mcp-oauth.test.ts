/**
 * MCP authorization discovery (MCP authorization spec; RFC 9728, RFC 8414): an MCP SDK client
 * that knows only the gateway's `/mcp` URL and its client credentials at the identity provider
 * gets a 401, follows `resource_metadata` to the gateway's protected-resource metadata, finds the
 * authorization server there, obtains a token (client-credentials grant, the SDK's
 * `ClientCredentialsProvider`) and calls a tool with it. The provider is a real `oidc-provider`
 * on loopback.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, startTestGateway, track } from '../../support/gateway.ts';
import { startTestIdp, type TestClient } from '../../support/oidc-provider.ts';

afterEach(closeAll);

const agent: TestClient = { id: 'mcp-agent', secret: 'mcp-agent-secret', scope: 'read write' };

async function oauthGateway() {
  const provider = track(await startTestIdp([agent]));
  const gw = await startTestGateway(gatewayYaml(`auth:
  type: oauth2
  oauth2: { issuer: ${provider.issuer}, audience: proto-gateway }
mcp: { enabled: true }`));
  return { provider, gw };
}

describe('MCP client discovers the authorization server and authenticates by itself', () => {
  it('401 → protected-resource metadata → provider metadata → client-credentials token → tools/list and a tool call', async () => {
    const { provider, gw } = await oauthGateway();
    const authProvider = new ClientCredentialsProvider({ clientId: agent.id, clientSecret: agent.secret, scope: 'read write', expectedIssuer: provider.issuer });
    const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { authProvider });
    const client = new Client({ name: 'oauth-agent', version: '1.0.0' });
    await client.connect(transport);
    track({ close: () => client.close() });
    // The SDK obtained the token at the provider named by the gateway's metadata.
    expect(authProvider.tokens()?.access_token).toMatch(/^ey/);
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toContain('get_manifest');
    const manifest = await client.callTool({ name: 'get_manifest', arguments: {} });
    expect(manifest.isError).toBeFalsy();
    expect(JSON.parse((manifest.content as Array<{ text: string }>)[0]!.text).PROTO.authentication).toMatchObject({ type: 'oauth2', tokenUrl: provider.tokenUrl });
  });

  it('a client whose credentials the provider refuses gets no session', async () => {
    const { provider, gw } = await oauthGateway();
    const authProvider = new ClientCredentialsProvider({ clientId: agent.id, clientSecret: 'wrong', expectedIssuer: provider.issuer });
    const transport = new StreamableHTTPClientTransport(new URL(`${gw.url}mcp`), { authProvider });
    const client = new Client({ name: 'oauth-agent', version: '1.0.0' });
    await expect(client.connect(transport)).rejects.toBeDefined();
    expect(authProvider.tokens()).toBeUndefined();
  });
});
