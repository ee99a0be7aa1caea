import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, getJson, startTestGateway } from '../support/gateway.ts';

afterEach(closeAll);

const gateway = () => startTestGateway(gatewayYaml());

describe('error bodies of the gateway', () => {
  it('answers an unknown path with 404 NOT_FOUND and the error body', async () => {
    const gw = await gateway();
    const res = await getJson(`${gw.url}nowhere`);
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toBe('application/json');
    expect(res.body).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String) } });
  });

  it('answers a wrong method with 405 METHOD_NOT_ALLOWED and Allow', async () => {
    const gw = await gateway();
    const res = await getJson(`${gw.url}.well-known/proto`, { method: 'DELETE' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET');
    expect(res.body.error.code).toBe('METHOD_NOT_ALLOWED');
  });

  it('puts an X-Request-Id on every answer, keeping a well-formed one from the caller', async () => {
    const gw = await gateway();
    const mine = await fetch(`${gw.url}healthz`, { headers: { 'X-Request-Id': 'req-123' } });
    expect(mine.headers.get('x-request-id')).toBe('req-123');
    const made = await fetch(`${gw.url}nowhere`, { headers: { 'X-Request-Id': 'bad id with spaces' } });
    expect(made.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('malformed request targets', () => {
  it('answers 400 to a target that is not a URL and keeps serving (regression: it crashed the process)', async () => {
    const { connect } = await import('node:net');
    const gw = await gateway();
    const { port } = new URL(gw.url);
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), '127.0.0.1', () => socket.write('GET http://[::1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'));
      let text = '';
      socket.on('data', (chunk) => (text += chunk));
      socket.on('end', () => resolve(text));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('"code":"INVALID_PARAMETER"');
    expect((await getJson(`${gw.url}healthz`)).status).toBe(200);
  });
});
