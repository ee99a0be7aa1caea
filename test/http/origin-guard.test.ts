import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, startTestGateway } from '../support/gateway.ts';

afterEach(closeAll);

const initialize = JSON.stringify({
  jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
});
const mcpHeaders = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
const a2aBody = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'none' } });

/** POSTs `body` to `url` with exactly these headers (undici lets a test set `Host`, as a browser under DNS rebinding would). */
async function post(url: string, headers: Record<string, string>, body: string) {
  const res = await request(url, { method: 'POST', headers, body });
  const text = await res.body.text();
  return { status: res.statusCode, body: text.startsWith('{') ? JSON.parse(text) : text };
}

async function gateway(extra = '') {
  return startTestGateway(`server: { host: 127.0.0.1, port: 0, cors: { origins: ['https://console.example.com'] } }\nstorage: { driver: memory }\n${extra}`);
}

describe('Origin and Host validation (DNS rebinding) on /mcp and the A2A endpoint', () => {
  it('refuses an MCP request from a foreign Origin with 403 FORBIDDEN, before a session opens', async () => {
    const gw = await gateway();
    const refused = await post(`${gw.url}mcp`, { ...mcpHeaders, origin: 'http://evil.example.com' }, initialize);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
    expect(refused.body.error.message).toContain('evil.example.com');
    const nullOrigin = await post(`${gw.url}mcp`, { ...mcpHeaders, origin: 'null' }, initialize);
    expect(nullOrigin.status).toBe(403);
  });

  it('refuses an MCP request whose Host is not the gateway\'s, even without an Origin', async () => {
    const gw = await gateway();
    const port = new URL(gw.url).port;
    for (const host of ['evil.example.com', `evil.example.com:${port}`, `127.0.0.1:${Number(port) + 1}`, `localhost:${port}`]) {
      const refused = await post(`${gw.url}mcp`, { ...mcpHeaders, host }, initialize);
      expect(refused.status, host).toBe(403);
      expect(refused.body.error.code).toBe('FORBIDDEN');
    }
  });

  it('accepts no Origin, the public URL\'s origin and server.cors.origins, with the public URL\'s Host', async () => {
    const gw = await gateway();
    const publicOrigin = new URL(gw.url).origin;
    for (const origin of [undefined, publicOrigin, 'https://console.example.com']) {
      const answer = await post(`${gw.url}mcp`, { ...mcpHeaders, ...(origin && { origin }) }, initialize);
      expect(answer.status, String(origin)).toBe(200);
    }
  });

  it('accepts a Host listed in mcp.allowedHosts (name: any port; name:port: that port only)', async () => {
    const gw = await gateway('mcp: { allowedHosts: [gw.internal, "edge.internal:8443"] }');
    expect((await post(`${gw.url}mcp`, { ...mcpHeaders, host: 'gw.internal:9999' }, initialize)).status).toBe(200);
    expect((await post(`${gw.url}mcp`, { ...mcpHeaders, host: 'edge.internal:8443' }, initialize)).status).toBe(200);
    expect((await post(`${gw.url}mcp`, { ...mcpHeaders, host: 'edge.internal:8444' }, initialize)).status).toBe(403);
  });

  it('matches a public URL on its scheme\'s default port with or without the port in Host', async () => {
    const gw = await gateway();
    const other = await startTestGateway('server: { host: 127.0.0.1, port: 0, publicUrl: "https://gw.example.com/" }\nstorage: { driver: memory }\n');
    for (const host of ['gw.example.com', 'gw.example.com:443', 'GW.example.com']) {
      expect((await post(`${other.url}mcp`, { ...mcpHeaders, host }, initialize)).status, host).toBe(200);
    }
    expect((await post(`${other.url}mcp`, { ...mcpHeaders, host: 'gw.example.com:80' }, initialize)).status).toBe(403);
    // The listening address is not the public host when a public URL is configured.
    expect((await post(`${other.url}mcp`, mcpHeaders, initialize)).status).toBe(403);
    expect((await post(`${gw.url}mcp`, mcpHeaders, initialize)).status).toBe(200);
  });

  it('applies the same check to the A2A JSON-RPC endpoint, but not to the public agent card', async () => {
    const gw = await gateway();
    const headers = { 'content-type': 'application/json', 'a2a-version': '1.0' };
    const foreign = await post(`${gw.url}a2a`, { ...headers, origin: 'http://evil.example.com' }, a2aBody);
    expect(foreign.status).toBe(403);
    expect(foreign.body.error).toMatchObject({ code: -32000, data: { code: 'FORBIDDEN' } });
    expect((await post(`${gw.url}a2a`, { ...headers, host: 'evil.example.com' }, a2aBody)).status).toBe(403);
    expect((await post(`${gw.url}a2a`, headers, a2aBody)).status).toBe(200);
    const card = await request(`${gw.url}.well-known/agent-card.json`, { headers: { host: 'evil.example.com' } });
    await card.body.dump();
    expect(card.statusCode).toBe(200);
  });
});
