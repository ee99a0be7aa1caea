/**
 * An MCP client in a web page of an allowed origin (`server.cors.origins`), in headless Chromium
 * (Debian's `/usr/bin/chromium`, driven by playwright-core): the browser's own CORS checks decide.
 * The page's preflight must allow the headers MCP Streamable HTTP sends (`Mcp-Protocol-Version`,
 * `Mcp-Session-Id`, and the 2026 revision's `Mcp-Method`/`Mcp-Name`), and the page must be able
 * to read the session id it is given and the `WWW-Authenticate` challenge of a 401 (how a browser
 * client finds the protected-resource metadata). A page of another origin is refused.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, startTestGateway, track } from '../../support/gateway.ts';

const KEY = 'browser-agent-key';

let browser: Browser;
beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
});
afterAll(async () => browser?.close());
afterEach(closeAll);

/** A page server on its own port: another origin than the gateway's. */
async function pageOrigin(): Promise<string> {
  const server: Server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>agent</title>'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  track({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** What the page sees of an MCP exchange (run in the browser). */
async function mcpFromPage([gatewayUrl, key]: readonly [string, string]) {
  const post = (body: unknown, headers: Record<string, string>) =>
    fetch(`${gatewayUrl}mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
    });
  const initialize = await post(
    { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'page', version: '1' } } },
    { 'x-api-key': key, 'mcp-protocol-version': '2025-06-18' },
  );
  const sessionId = initialize.headers.get('mcp-session-id');
  await initialize.text();
  const list = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'x-api-key': key, 'mcp-protocol-version': '2025-06-18', 'mcp-session-id': sessionId ?? '' });
  const listText = await list.text();
  const modern = await post(
    {
      jsonrpc: '2.0',
      id: 3,
      method: 'tools/list',
      params: { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'page', version: '1' } } },
    },
    { 'x-api-key': key, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' },
  );
  const unauthenticated = await post({ jsonrpc: '2.0', id: 4, method: 'tools/list' }, { 'mcp-protocol-version': '2025-06-18' });
  return {
    initialize: initialize.status,
    sessionId,
    list: list.status,
    listsTools: listText.includes('send_command'),
    modern: modern.status,
    unauthenticated: unauthenticated.status,
    challenge: unauthenticated.headers.get('www-authenticate'),
  };
}

describe('MCP from a web page of an allowed origin', () => {
  it('the preflight allows the MCP headers; the page reads its session id and a 401 challenge', { timeout: 60_000 }, async () => {
    const origin = await pageOrigin();
    const gw = await startTestGateway(gatewayYaml(`server: { host: 127.0.0.1, port: 0, cors: { origins: ["${origin}"] } }
auth:
  type: apiKey
  keys:
    - { id: agent, key: ${KEY}, scopes: [read, write] }
mcp: { enabled: true }
`).replace('server: { host: 127.0.0.1, port: 0 }\n', ''));
    const page = await browser.newPage();
    await page.goto(origin);
    const seen = await page.evaluate(mcpFromPage, [gw.url, KEY] as const).catch((err: Error) => ({ error: err.message }));
    expect(seen).toEqual({
      initialize: 200,
      sessionId: expect.stringMatching(/.+/),
      list: 200,
      listsTools: true,
      modern: 200,
      unauthenticated: 401,
      challenge: expect.stringMatching(/^ApiKey /),
    });
  });

  it('a page of an origin not in server.cors.origins cannot call the endpoint (the browser refuses the preflight)', { timeout: 60_000 }, async () => {
    const origin = await pageOrigin();
    const gw = await startTestGateway(gatewayYaml(`auth:
  type: apiKey
  keys:
    - { id: agent, key: ${KEY}, scopes: [read, write] }
mcp: { enabled: true }
`));
    const page = await browser.newPage();
    await page.goto(origin);
    const seen = await page.evaluate(mcpFromPage, [gw.url, KEY] as const).catch((err: Error) => ({ error: err.message }));
    expect(seen).toEqual({ error: expect.stringMatching(/Failed to fetch/) });
  });
});
