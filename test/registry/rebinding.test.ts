import { afterEach, describe, expect, it } from 'vitest';
import { scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';
import { tableResolver } from '../bridges/webhooks/support.ts';
import { send } from './support.ts';

afterEach(closeAll);

describe('runtime-registered services are pinned like webhooks', () => {
  it('connects only to an address registry.allowNetworks allows at connect time: DNS rebinding after registration reaches nothing', async () => {
    // Every answer closes its connection, so each call needs a new socket (and a new lookup).
    const backend = await scriptedBackend((req, res) => {
      const close = { connection: 'close' };
      if (req.url === '/.well-known/proto') return sendJson(res, 200, { PROTO: { version: '1.0.0', services: {} } }, close);
      if (req.url.startsWith('/events')) return sendJson(res, 200, { events: [] }, close);
      sendJson(res, req.url.startsWith('/probe') ? 200 : 404, { ok: true }, close);
    });
    const port = new URL(backend.url).port;
    // `localhost` resolves to the backend for the system resolver too: only the guard's own lookup can
    // refuse it, so the refusal below proves the connection went through the guard.
    const table: Record<string, string[]> = { localhost: ['127.0.0.1'] };
    const resolver = tableResolver(table);
    const gw = await startTestGateway(gatewayYaml('registry: { allowNetworks: [127.0.0.1/32] }'), {}, undefined, { resolver });
    const created = await send('POST', `${gw.url}services`, { id: 'svc', name: 'com.example.svc', endpoint: `http://localhost:${port}/` });
    expect(created.status).toBe(201);
    const before = await getJson(`${gw.url}services/svc/probe-before`);
    expect(before.status).toBe(200);
    expect(backend.received.some((r) => r.url === '/probe-before')).toBe(true);
    const lookups = resolver.calls.length;

    table.localhost = ['127.0.0.2'];
    const after = await getJson(`${gw.url}services/svc/probe-after`);
    expect(after.status).toBeGreaterThanOrEqual(502);
    expect(backend.received.some((r) => r.url === '/probe-after')).toBe(false);
    expect(resolver.calls.length).toBeGreaterThan(lookups);
    // The undici pool (manifest, catalogues, commands, queries, events) is pinned the same way.
    const manifests = backend.received.filter((r) => r.url === '/.well-known/proto').length;
    const svc = gw.backends.require('svc');
    if (svc.kind !== 'proto') throw new Error('expected a proto backend');
    await svc.refresh();
    expect(backend.received.filter((r) => r.url === '/.well-known/proto').length).toBe(manifests);
    expect(svc.lastError).toBeDefined();
  });
});
