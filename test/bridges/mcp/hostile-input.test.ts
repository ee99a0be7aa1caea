/** What a broken or hostile MCP client sends: each gets a clear refusal, and the gateway keeps serving. */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { correlationUri } from '../../../src/bridges/mcp/mcp-resources.ts';
import { closeAll, getJson } from '../../support/gateway.ts';
import { sseRecords } from '../../support/sse.ts';
import { KEY, mcpGateway, READER_KEY } from './support.ts';

afterEach(closeAll);

const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'X-API-Key': KEY };
const modernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' } };

/** A raw `subscriptions/listen` POST; resolves with the status and the JSON-RPC messages read within `ms`. */
async function listen(base: string, params: unknown, ms = 1500): Promise<{ status: number; messages: any[] }> {
  const res = await request(`${base}mcp`, {
    method: 'POST',
    headers: { ...headers, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'subscriptions/listen', params }),
  });
  const messages: any[] = [];
  const timer = setTimeout(() => res.body.destroy(), ms);
  try {
    for await (const record of sseRecords(res.body)) if (record.data) messages.push(JSON.parse(record.data));
  } catch {
    // destroyed at the deadline
  } finally {
    clearTimeout(timer);
  }
  return { status: res.statusCode, messages };
}

describe('MCP front: hostile and broken input', () => {
  it('answers an unknown, forged or other key\'s Mcp-Session-Id with 404 on POST, GET and DELETE', async () => {
    const { gw } = await mcpGateway();
    const ping = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    for (const id of ['nope', '../../etc', 'x'.repeat(5000)]) {
      const h = { ...headers, 'mcp-session-id': id, 'mcp-protocol-version': '2025-06-18' };
      expect((await getJson(`${gw.url}mcp`, { method: 'POST', headers: h, body: ping })).status, id.slice(0, 10)).toBe(404);
      expect((await getJson(`${gw.url}mcp`, { headers: h })).status).toBe(404);
      expect((await getJson(`${gw.url}mcp`, { method: 'DELETE', headers: h })).status).toBe(404);
    }
    const init = await request(`${gw.url}mcp`, {
      method: 'POST', headers,
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
    });
    await init.body.text();
    const stolen = { ...headers, 'X-API-Key': READER_KEY, 'mcp-session-id': init.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-06-18' };
    expect((await getJson(`${gw.url}mcp`, { headers: stolen })).status).toBe(404);
    expect((await getJson(`${gw.url}mcp`, { method: 'DELETE', headers: stolen })).status).toBe(404);
  });

  it('answers an initialize with params that are not an initialize\'s -32602 Invalid params, never -32603 (fuzz seed 423415073)', async () => {
    const { gw } = await mcpGateway();
    for (const params of [{ name: 'nope', arguments: null }, {}, null, { protocolVersion: 5 }]) {
      const res = await getJson(`${gw.url}mcp`, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 'y$ZnC9', method: 'initialize', params }) });
      const body = typeof res.body === 'string' ? JSON.parse(res.body.replace(/^[\s\S]*?data: /, '')) : res.body;
      expect(body, JSON.stringify(params)).toMatchObject({ jsonrpc: '2.0', id: 'y$ZnC9', error: { code: -32602 } });
    }
    // In a batch (fuzz seed 1852610251), valid or not: -32600.
    const init = (params: unknown) => ({ jsonrpc: '2.0', id: 1, method: 'initialize', params });
    for (const batch of [[init({ protocolVersion: '', capabilities: [1, false], clientInfo: false }), { jsonrpc: '2.0', id: 2, method: 'ping' }], [init({ protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'x', version: '1' } })]]) {
      const res = await getJson(`${gw.url}mcp`, { method: 'POST', headers, body: JSON.stringify(batch) });
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32600 } });
    }
  });

  it('answers a 2025 GET or DELETE without a session 405, and malformed JSON 400, and keeps serving', async () => {
    const { gw } = await mcpGateway();
    expect((await getJson(`${gw.url}mcp`, { headers })).status).toBe(405);
    expect((await getJson(`${gw.url}mcp`, { method: 'DELETE', headers })).status).toBe(405);
    expect((await getJson(`${gw.url}mcp`, { method: 'POST', headers, body: '{"jsonrpc":' })).status).toBe(400);
    const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
    expect((await getJson(`${gw.url}mcp`, { method: 'POST', headers, body: deep })).status).toBe(400);
    expect((await getJson(`${gw.url}readyz`)).status).toBe(200);
  });

  it('acknowledges a listen with a missing or malformed filter with nothing honored and ends it; bounds a huge one', async () => {
    const { gw } = await mcpGateway();
    for (const params of [{ _meta: modernMeta }, { notifications: { resourceSubscriptions: 'all' }, _meta: modernMeta }, { notifications: { resourceSubscriptions: [42, null, 'http://evil/'] }, _meta: modernMeta }]) {
      const { status, messages } = await listen(gw.url, params);
      expect(status).toBe(200);
      expect(messages[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { notifications: {} } });
      expect(messages[1]).toMatchObject({ id: 7, result: { resultType: 'complete' } });
    }
    const many = Array.from({ length: 5000 }, (_, i) => correlationUri(`c-${i}`));
    const { messages } = await listen(gw.url, { notifications: { resourceSubscriptions: many }, _meta: modernMeta });
    expect(messages[0].params.notifications.resourceSubscriptions).toHaveLength(100);
    expect((await getJson(`${gw.url}readyz`)).status).toBe(200);
  });
});
