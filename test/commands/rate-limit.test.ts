import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, gatewayYaml, startTestGateway } from '../support/gateway.ts';
import { FAST_DISPATCH, ordersBackend, placeOrder, post, scriptedBackend, sendJson } from './support.ts';

afterEach(closeAll);

const auth = `auth:
  type: apiKey
  keys:
    - { id: alice, key: alice-key, scopes: [read, write] }
    - { id: bob, key: bob-key, scopes: [read, write] }`;

async function limitedGateway(rateLimit: string) {
  const backend = await scriptedBackend((_req, res) => sendJson(res, 201, {}));
  return startTestGateway(
    gatewayYaml(`${FAST_DISPATCH.replace('commands: {', `commands: { rateLimit: ${rateLimit},`)}
server: { host: 127.0.0.1, port: 0, bodyLimit: 1kb }
${auth}
backends:
${ordersBackend(backend.url)}`).replace('server: { host: 127.0.0.1, port: 0 }\n', ''),
  );
}

describe('rate limit per principal (commands.rateLimit)', () => {
  it('answers 429 RATE_LIMITED with Retry-After once the burst is spent; other principals are unaffected', async () => {
    const gw = await limitedGateway('{ perSecond: 0.5, burst: 2 }');
    const alice = { 'x-api-key': 'alice-key' };
    expect((await post(`${gw.url}commands`, placeOrder(), alice)).status).toBe(201);
    expect((await post(`${gw.url}commands`, placeOrder(), alice)).status).toBe(201);
    const limited = await post(`${gw.url}commands`, placeOrder(), alice);
    expect(limited.status).toBe(429);
    expect(limited.body).toEqual({ error: { code: 'RATE_LIMITED', message: expect.any(String), details: { retryAfterSeconds: 2 } } });
    expect(limited.headers.get('retry-after')).toBe('2');
    expect((await post(`${gw.url}commands`, placeOrder(), { 'x-api-key': 'bob-key' })).status).toBe(201);
    const metrics = await (await fetch(`${gw.url}metrics`, { headers: alice })).text();
    expect(metrics).toMatch(/proto_gateway_commands_total\{type="unknown",outcome="rate_limited"\} 1/);
  });

  it('comes after the scope check and before the body is read', async () => {
    const gw = await limitedGateway('{ perSecond: 1, burst: 1 }');
    const alice = { 'x-api-key': 'alice-key' };
    expect((await post(`${gw.url}commands`, 'x'.repeat(2000), alice)).status).toBe(413);
    expect((await post(`${gw.url}commands`, 'x'.repeat(2000), alice)).status).toBe(429);
    expect((await post(`${gw.url}commands`, '{', alice)).status).toBe(429);
    expect((await post(`${gw.url}commands`, placeOrder())).status).toBe(401);
  });

  it('is off with perSecond 0', async () => {
    const gw = await limitedGateway('{ perSecond: 0, burst: 0 }');
    const answers = await Promise.all(Array.from({ length: 30 }, () => post(`${gw.url}commands`, placeOrder(), { 'x-api-key': 'alice-key' })));
    expect(answers.every((a) => a.status === 201)).toBe(true);
  });
});
