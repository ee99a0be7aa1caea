import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { afterEach, describe, expect, it } from 'vitest';
import { startOrdersService } from '../../examples/orders-service.ts';
import { startPaymentsService } from '../../examples/payments-service.ts';
import { closeAll, eventually, freePort, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';

afterEach(closeAll);

const manifestSchema = JSON.parse(readFileSync(new URL('../../schemas/manifest.json', import.meta.url), 'utf8'));
const ajv = new Ajv({ allErrors: true, strict: false });
(addFormats as unknown as (a: Ajv) => void)(ajv);
const validateManifest = ajv.compile(manifestSchema);

function backendsYaml(paymentsUrl: string, ordersUrl: string, refresh = '30s') {
  return `backends:
  - id: orders
    kind: legacy
    url: ${ordersUrl}
    service: com.example.orders
    description: Orders (legacy REST)
    version: 1.0.0
  - id: payments
    kind: proto
    url: ${paymentsUrl}
    refresh: ${refresh}
`;
}

/** Every string value in a JSON document. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object') return Object.values(value).flatMap(strings);
  return [];
}

async function setup(basePath = '/') {
  const payments = track(await startPaymentsService({ port: 0, basePath }));
  const orders = track(await startOrdersService({ port: 0 }));
  const gw = await startTestGateway(gatewayYaml(backendsYaml(payments.endpoint, orders.url)));
  const { body } = await getJson(`${gw.url}.well-known/proto`);
  return { payments, orders, gw, manifest: body };
}

describe('aggregated public manifest', () => {
  it('validates against the manifest schema and lists the gateway, the proto and the legacy service', async () => {
    const { gw, manifest } = await setup();
    expect(validateManifest(manifest), JSON.stringify(validateManifest.errors)).toBe(true);
    const services = manifest.PROTO.services;
    expect(services['io.proto.agents'].http.endpoint).toBe(gw.url);
    expect(services['com.example.payments']).toMatchObject({
      version: '1.2.0',
      http: { endpoint: `${gw.url}services/payments/` },
      spec: `${gw.url}services/payments/docs/payments`,
    });
    expect(services['com.example.orders']).toEqual({ version: '1.0.0', description: 'Orders (legacy REST)', http: { endpoint: `${gw.url}services/orders/` } });
  });

  it('declares in the events push block only the channels it serves, each true, within the published keys (sse, webhook, mcp)', async () => {
    const { manifest } = await setup();
    const events = manifest.PROTO.capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.events');
    expect(events.push).toEqual({ sse: true, webhook: true, mcp: true });
    // The schema closes push to the three published keys: an a2a flag (or any false) fails validation.
    const withA2a = structuredClone(manifest);
    withA2a.PROTO.capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.events').push.a2a = false;
    expect(validateManifest(withA2a)).toBe(false);
  });

  it('drops the mcp and a2a blocks it does not front and the backend\'s own io.proto.* capabilities', async () => {
    const { manifest } = await setup();
    const payments = manifest.PROTO.services['com.example.payments'];
    expect(payments.mcp).toBeUndefined();
    expect(payments.a2a).toBeUndefined();
    const names = manifest.PROTO.capabilities.map((c: { name: string }) => c.name);
    expect(names.filter((n: string) => n === 'io.proto.agents.events')).toHaveLength(1);
    const events = manifest.PROTO.capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.events');
    expect(events.service).toBe('io.proto.agents');
  });

  it('carries a custom capability over with its URLs rewritten and its service key', async () => {
    const { gw, manifest } = await setup();
    const refunds = manifest.PROTO.capabilities.find((c: { name: string }) => c.name === 'com.example.payments.refunds');
    expect(refunds).toMatchObject({
      service: 'com.example.payments',
      spec: `${gw.url}services/payments/docs/refunds`,
      schema: `${gw.url}services/payments/schemas/refund.json`,
      endpoints: [{ method: 'GET', path: '/refunds' }],
    });
  });

  it('leaks no backend address anywhere, also when the backend endpoint has a path', async () => {
    for (const basePath of ['/', '/api/v1/']) {
      const { payments, orders, manifest, gw } = await setup(basePath);
      const text = JSON.stringify(manifest);
      for (const address of [payments.url, orders.url]) expect(text).not.toContain(new URL(address).host);
      expect(manifest.PROTO.services['com.example.payments'].http.endpoint).toBe(`${gw.url}services/payments/`);
      await closeAll();
    }
  });

  it('advertises only URLs that answer', async () => {
    const { gw, manifest } = await setup();
    const urls = strings(manifest).filter((s) => /^https?:\/\//.test(s) && !s.includes('{'));
    expect(urls.length).toBeGreaterThan(5);
    for (const url of new Set(urls)) {
      // Endpoint roots and the MCP server (a JSON-RPC endpoint: a bare GET is not an MCP request) are bases, not documents.
      const endpointRoot = Object.values(manifest.PROTO.services).some((s: any) => s.http?.endpoint === url || s.mcp?.server === url);
      if (endpointRoot) continue;
      expect((await fetch(url)).status, url).toBe(200);
    }
    const events = manifest.PROTO.capabilities.find((c: { name: string }) => c.name === 'io.proto.agents.events');
    for (const endpoint of events.endpoints.filter((e: { path: string }) => !e.path.includes('{'))) {
      expect((await fetch(`${gw.url}${endpoint.path.slice(1)}`)).status, endpoint.path).toBe(200);
    }
  });

  it('serves one backend\'s part at /services/{id}/.well-known/proto, rewritten and valid', async () => {
    const { gw, payments } = await setup();
    const { status, body } = await getJson(`${gw.url}services/payments/.well-known/proto`);
    expect(status).toBe(200);
    expect(validateManifest(body), JSON.stringify(validateManifest.errors)).toBe(true);
    expect(JSON.stringify(body)).not.toContain(new URL(payments.url).host);
    expect(body.PROTO.services['com.example.payments'].http.endpoint).toBe(`${gw.url}services/payments/`);
    expect(body.PROTO.capabilities.map((c: { name: string }) => c.name)).toContain('io.proto.agents.commands');
    expect((await getJson(`${gw.url}services/nobody/.well-known/proto`)).body.error.code).toBe('SERVICE_NOT_FOUND');
  });

  it('starts while a proto backend is down, lists it with what is known, and picks it up when it comes up', async () => {
    const port = await freePort();
    const orders = track(await startOrdersService({ port: 0 }));
    const gw = await startTestGateway(gatewayYaml(backendsYaml(`http://127.0.0.1:${port}`, orders.url, '200ms')));
    const before = (await getJson(`${gw.url}.well-known/proto`)).body;
    expect(validateManifest(before)).toBe(true);
    expect(before.PROTO.services.payments).toMatchObject({ http: { endpoint: `${gw.url}services/payments/` } });
    expect(before.PROTO.services['com.example.payments']).toBeUndefined();
    track(await startPaymentsService({ port }));
    const after = await eventually(async () => {
      const { body } = await getJson(`${gw.url}.well-known/proto`);
      return body.PROTO.services['com.example.payments'] ? body : undefined;
    });
    expect(after.PROTO.services.payments).toBeUndefined();
    expect(JSON.stringify(after)).not.toContain(`127.0.0.1:${port}`);
  });
});

describe('addresses a backend mentions that are not its own', () => {
  it('never publishes them: every service gets the public endpoint, foreign URLs are dropped', async () => {
    const { createServer } = await import('node:http');
    let base = '';
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({
        PROTO: {
          version: '1.0.0',
          services: {
            'com.acme.main': { version: '1.0.0', description: 'main', spec: `${base}/docs`, http: { endpoint: `${base}/` } },
            'com.acme.internal': { version: '1.0.0', description: 'internal', spec: 'http://wiki.corp.internal/svc', http: { endpoint: 'http://10.1.2.3:9000/' } },
          },
          capabilities: [
            { name: 'com.acme.main.ok', version: '1.0.0', description: 'kept', spec: `${base}/spec`, schema: `${base}/schema.json`, service: 'com.acme.main' },
            { name: 'com.acme.main.leaky', version: '1.0.0', description: 'dropped', spec: 'http://wiki.corp.internal/cap', schema: `${base}/schema.json` },
          ],
        },
      }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    track({ close: () => new Promise<void>((resolve) => server.close(() => resolve())) });
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    const gw = await startTestGateway(gatewayYaml(`backends:\n  - { id: acme, kind: proto, url: "${base}" }`));
    for (const path of ['.well-known/proto', 'services/acme/.well-known/proto']) {
      const { body } = await getJson(`${gw.url}${path}`);
      const text = JSON.stringify(body);
      for (const leak of ['10.1.2.3', 'corp.internal', new URL(base).host]) expect(text, path).not.toContain(leak);
      expect(body.PROTO.services['com.acme.internal'].http.endpoint).toBe(`${gw.url}services/acme/`);
      expect(body.PROTO.services['com.acme.main'].spec).toBe(`${gw.url}services/acme/docs`);
      const names = body.PROTO.capabilities.map((c: { name: string }) => c.name);
      expect(names).toContain('com.acme.main.ok');
      expect(names).not.toContain('com.acme.main.leaky');
    }
  });
});
