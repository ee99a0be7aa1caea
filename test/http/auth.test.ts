import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';

afterEach(closeAll);

const keys = `
    - { id: ops, key: "\${OPS_KEY}", scopes: [read, write, admin] }
    - { id: reader, key: read-key, scopes: [read] }
    - { id: writer, key: write-key, scopes: [write] }`;

const env = { OPS_KEY: 'ops-key' };

async function apiKeyGateway(extra = '') {
  return startTestGateway(gatewayYaml(`auth:\n  type: apiKey\n  header: X-Api-Key\n  queryParam: api_key\n  keys:${keys}\n${extra}`), env);
}

describe('authentication and scopes', () => {
  it('refuses a protected GET without credentials or with a wrong key: 401 with the error body', async () => {
    const gw = await apiKeyGateway();
    const none = await getJson(`${gw.url}events`);
    expect(none.status).toBe(401);
    expect(none.body.error.code).toBe('UNAUTHENTICATED');
    const wrong = await getJson(`${gw.url}events`, { headers: { 'X-Api-Key': 'nope' } });
    expect(wrong.status).toBe(401);
  });

  it('takes the key in its header, as Authorization: Bearer, and in the query parameter', async () => {
    const gw = await apiKeyGateway();
    expect((await getJson(`${gw.url}events`, { headers: { 'X-Api-Key': 'read-key' } })).status).toBe(200);
    expect((await getJson(`${gw.url}events`, { headers: { Authorization: 'Bearer read-key' } })).status).toBe(200);
    expect((await getJson(`${gw.url}events?api_key=read-key`)).status).toBe(200);
    expect((await getJson(`${gw.url}events?api_key=nope`)).status).toBe(401);
  });

  it('does not take the key in the query when auth.queryParam is not set', async () => {
    const gw = await startTestGateway(gatewayYaml(`auth:\n  type: apiKey\n  keys:${keys}`), env);
    expect((await getJson(`${gw.url}events?api_key=read-key`)).status).toBe(401);
  });

  it('applies scopes independently: read for GETs, write for mutations', async () => {
    const gw = await apiKeyGateway();
    const writerReads = await getJson(`${gw.url}events`, { headers: { 'X-Api-Key': 'write-key' } });
    expect(writerReads.status).toBe(403);
    expect(writerReads.body.error).toMatchObject({ code: 'FORBIDDEN', details: { scope: 'read' } });
    expect((await getJson(`${gw.url}events`, { headers: { 'X-Api-Key': 'ops-key' } })).status).toBe(200);
  });

  it('serves discovery, health, readiness, schemas and spec pages without credentials', async () => {
    const gw = await apiKeyGateway();
    for (const path of ['.well-known/proto', '.well-known/proto.json', 'healthz', 'readyz', 'schemas/manifest.json', 'spec/io.proto.agents.events']) {
      expect((await fetch(`${gw.url}${path}`)).status, path).toBe(200);
    }
  });

  it('protects /metrics with read unless metrics.public', async () => {
    const gw = await apiKeyGateway();
    expect((await fetch(`${gw.url}metrics`)).status).toBe(401);
    expect((await fetch(`${gw.url}metrics`, { headers: { 'X-Api-Key': 'write-key' } })).status).toBe(403);
    expect((await fetch(`${gw.url}metrics`, { headers: { 'X-Api-Key': 'read-key' } })).status).toBe(200);
    const open = await apiKeyGateway('metrics: { public: true }');
    expect((await fetch(`${open.url}metrics`)).status).toBe(200);
  });

  it('bearer: accepts only Authorization: Bearer <token>', async () => {
    const gw = await startTestGateway(gatewayYaml(`auth:\n  type: bearer\n  keys:${keys}`), env);
    expect((await getJson(`${gw.url}events`, { headers: { Authorization: 'Bearer read-key' } })).status).toBe(200);
    expect((await getJson(`${gw.url}events`, { headers: { 'X-Api-Key': 'read-key' } })).status).toBe(401);
    expect((await getJson(`${gw.url}events`, { headers: { Authorization: 'Basic cmVhZC1rZXk=' } })).status).toBe(401);
  });

  it('declares the scheme in the manifest', async () => {
    const gw = await apiKeyGateway();
    const { body } = await getJson(`${gw.url}.well-known/proto`);
    expect(body.PROTO.authentication).toEqual({ type: 'apiKey', in: 'header', scheme: 'X-Api-Key' });
  });
});
