import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../../support/gateway.ts';
import { append, cloudEvent, openLive, openStream, readRecords } from './support.ts';

afterEach(closeAll);

const apiKeyAuth = `auth:
  type: apiKey
  header: X-Api-Key
  queryParam: api_key
  keys:
    - { id: reader, key: read-key, scopes: [read] }
    - { id: writer, key: write-key, scopes: [write] }`;

describe('SSE keepalive', () => {
  it('sends ": keepalive" comment lines every sse.keepalive while idle', async () => {
    const gw = await startTestGateway(gatewayYaml('sse: { keepalive: 100ms }'));
    const stream = await openStream(`${gw.url}events/stream`);
    const records = await readRecords(stream, {
      until: (_, all) => all.filter((record) => record.comments.includes('keepalive')).length === 2,
    });
    const keepalives = records.filter((record) => record.comments.includes('keepalive'));
    expect(keepalives).toHaveLength(2);
    expect(keepalives.every((record) => record.data === '' && record.id === undefined)).toBe(true);
  });
});

describe('SSE authentication', () => {
  it('answers 401 with the error body without credentials, before any stream byte', async () => {
    const gw = await startTestGateway(gatewayYaml(apiKeyAuth));
    const res = await getJson(`${gw.url}events/stream`, { headers: { accept: 'text/event-stream' } });
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHENTICATED');
    const scoped = await getJson(`${gw.url}services/x/events/stream`);
    expect(scoped.status).toBe(401);
  });

  it('opens the stream with the key in the header or in auth.queryParam (EventSource cannot send headers)', async () => {
    const gw = await startTestGateway(gatewayYaml(apiKeyAuth));
    const byQuery = await openLive(`${gw.url}events/stream?api_key=read-key&type=AuthV1`);
    const byHeader = await openLive(`${gw.url}events/stream?type=AuthV1`, { 'X-Api-Key': 'read-key' });
    const [event] = await append(gw, [cloudEvent('AuthV1')]);
    expect((await byQuery.events(1)).map((r) => r.id)).toEqual([event.id]);
    expect((await byHeader.events(1)).map((r) => r.id)).toEqual([event.id]);
    byQuery.close();
    byHeader.close();
    expect((await getJson(`${gw.url}events/stream?api_key=wrong`)).status).toBe(401);
  });

  it('needs the read scope: 403 FORBIDDEN for a write-only key', async () => {
    const gw = await startTestGateway(gatewayYaml(apiKeyAuth));
    const res = await getJson(`${gw.url}events/stream?api_key=write-key`);
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
  });
});
