/**
 * Each part that follows a reload, on an in-process gateway reloaded with `gateway.reload()`: the
 * dispatcher (mapping current at delivery time; a removed backend's undelivered commands end with
 * SERVICE_NOT_FOUND), record pollers and queries, settings that need a restart next to those that
 * apply, CORS and the log level, the limits (rate limit, SSE, MCP, webhooks) and retention, the
 * OAuth2 settings, and the runtime-registered services a reload leaves alone.
 */
import { randomUUID } from 'node:crypto';
import { importJWK, SignJWT } from 'jose';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { connect } from '../bridges/mcp/support.ts';
import { startReceiver, subscribe, tableResolver } from '../bridges/webhooks/support.ts';
import { authorizePayment, envelope, exampleBackends, post, protoBackend, scriptedBackend, sendJson } from '../commands/support.ts';
import { closeAll, eventually, gatewayYaml, getJson, reloadable, track } from '../support/gateway.ts';
import { startTestIdp } from '../support/oidc-provider.ts';
import { sseRecords } from '../support/sse.ts';
import { deletePrefix, randomPrefix, SHARED_REDIS_URL } from '../support/redis.ts';

afterEach(closeAll);

function legacy(url: string, path: string, extra = ''): string {
  return `backends:
  - id: alpha
    kind: legacy
    url: "${url}/alpha"
    commands:
      - type: DoThing
        version: "1.0"
        jsonSchema: { type: object }
        request: { method: POST, path: "${path}" }
${extra}`;
}

const SLOW_RETRY = 'commands: { dispatch: { timeout: 2s, concurrency: 2, retry: { schedule: [400ms, 400ms, 400ms, 400ms, 400ms, 400ms, 400ms, 400ms] } } }';

describe('the dispatcher follows a reload', () => {
  it('delivers a command accepted before the reload with the mapping current at delivery time', async () => {
    const backend = track(await scriptedBackend((req, res) => sendJson(res, req.url.startsWith('/alpha/v1') ? 503 : 200, {})));
    const { gw, rewrite } = await reloadable(gatewayYaml(`${SLOW_RETRY}\n${legacy(backend.url, '/v1/do')}`));
    const command = envelope('DoThing', 'do-thing/1.0', {});
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    await eventually(() => backend.received.some((r) => r.url === '/alpha/v1/do'));
    expect((await rewrite(gatewayYaml(`${SLOW_RETRY}\n${legacy(backend.url, '/v2/do')}`))).outcome).toBe('applied');
    const delivered = await eventually(() => backend.received.find((r) => r.url === '/alpha/v2/do'), 10_000);
    expect(delivered.headers['x-request-id']).toBe(command.id);
  });

  it('ends the undelivered commands of a removed backend with SERVICE_NOT_FOUND, as for a deleted service', async () => {
    const backend = track(await scriptedBackend((_req, res) => sendJson(res, 503, {})));
    const yaml = (backends: string) => gatewayYaml(`commands: { dispatch: { retry: { schedule: [30s] } } }\n${backends}`);
    const { gw, rewrite } = await reloadable(yaml(legacy(backend.url, '/do')));
    const command = envelope('DoThing', 'do-thing/1.0', {});
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    await eventually(() => backend.received.length === 1);
    const report = await rewrite(yaml('backends: []\n'));
    expect(report).toMatchObject({ outcome: 'applied', backendsRemoved: ['alpha'] });
    const failed = await eventually(async () => (await gw.log.query({ type: 'DoThingFailedV1' }, 0, 10)).events[0]?.event, 10_000);
    expect(failed.correlationid).toBe(command.id);
    expect((failed.data as any).error.code).toBe('SERVICE_NOT_FOUND');
    expect(await gw.commandStore.depth('alpha')).toBe(0);
  });
});

describe('ingestion and queries follow a reload', () => {
  it('starts the record poller of an added records entry, stops a removed one, and runs a changed query mapping', async () => {
    const backend = track(await scriptedBackend((_req, res) => sendJson(res, 200, [])));
    const records = '    records:\n      - { path: /items, interval: 100ms, types: [ItemSeenV1], event: { type: "\'ItemSeenV1\'", id: "id" } }\n';
    const query = (path: string) => `    queries:\n      - { schema: item, response: { type: array }, request: { method: GET, path: "${path}" } }\n`;
    const { gw, rewrite } = await reloadable(gatewayYaml(legacy(backend.url, '/do', query('/q1'))));
    const polls = () => backend.received.filter((r) => r.url.startsWith('/alpha/items')).length;
    await new Promise((r) => setTimeout(r, 300));
    expect(polls()).toBe(0);
    expect((await rewrite(gatewayYaml(legacy(backend.url, '/do', `${query('/q2')}${records}`)))).outcome).toBe('applied');
    await eventually(() => polls() >= 2, 10_000);
    expect((await fetch(`${gw.url}queries/item`)).status).toBe(200);
    expect(backend.received.some((r) => r.url === '/alpha/q2')).toBe(true);
    expect(backend.received.some((r) => r.url === '/alpha/q1')).toBe(false);
    expect((await rewrite(gatewayYaml(legacy(backend.url, '/do')))).outcome).toBe('applied');
    const stopped = polls();
    await new Promise((r) => setTimeout(r, 400));
    expect(polls()).toBeLessThanOrEqual(stopped + 1);
    expect((await fetch(`${gw.url}queries/item`)).status).toBe(404);
  });

  it('follows a proto backend to its new URL: commands go there, and its events are ingested from there', async () => {
    const first = await exampleBackends();
    const second = await exampleBackends();
    const yaml = (url: string) => gatewayYaml(`commands: { dispatch: { timeout: 2s } }\nbackends:\n${protoBackend(url)}`);
    const { gw, rewrite } = await reloadable(yaml(first.payments.url));
    await eventually(async () => (await (await fetch(`${gw.url}commands`)).text()).includes('authorize-payment'));
    expect((await rewrite(yaml(second.payments.url))).backendsChanged).toEqual(['payments']);
    const command = authorizePayment();
    expect((await post(`${gw.url}commands`, command)).status).toBe(201);
    await eventually(() => second.payments.events.some((event) => event.correlationid === command.id), 10_000);
    expect(first.payments.events.some((event) => event.correlationid === command.id)).toBe(false);
    const spontaneous = second.payments.emit('PaymentSettledV1', { paymentId: 'p-1' });
    await eventually(async () => (await gw.log.positionOf(spontaneous.id as string)) !== undefined, 10_000);
  });
});

describe('settings follow a reload', () => {
  it('names what needs a restart, and still applies CORS origins and the log level', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const yaml = (server: string) => `server: { host: 127.0.0.1, port: 0${server} }\nstorage: { driver: memory }\n`;
    const { gw, rewrite } = await reloadable(yaml(''), { logger });
    const preflight = () => fetch(`${gw.url}commands`, { method: 'OPTIONS', headers: { origin: 'https://app.example', 'access-control-request-method': 'POST' } });
    expect((await preflight()).headers.get('access-control-allow-origin')).toBeNull();
    const report = await rewrite(yaml(', shutdownTimeout: 3s, logLevel: warn, cors: { origins: ["https://app.example"] }'));
    expect(report).toMatchObject({ outcome: 'applied', needsRestart: ['server.shutdownTimeoutMs'] });
    expect(lines.some((line) => line.includes('needs a restart: server.shutdownTimeoutMs'))).toBe(true);
    expect((await preflight()).headers.get('access-control-allow-origin')).toBe('https://app.example');
    expect(logger.level).toBe('warn');
    const status = await (await fetch(`${gw.url}status`)).json();
    expect(status.config).toMatchObject({ needsRestart: ['server.shutdownTimeoutMs'], lastReload: { outcome: 'applied', trigger: 'test' } });
  });

  it('applies the rate limit, the stream, MCP session and webhook caps, and retention', async () => {
    const keys = 'auth:\n  type: apiKey\n  keys:\n    - { id: alice, key: alice-key, scopes: [read, write] }\n';
    const hooks = (cap: number) => `webhooks: { allowHttp: true, allowPrivateNetworks: [127.0.0.0/8], maxSubscriptions: ${cap} }\n`;
    const before = gatewayYaml(`${keys}${hooks(10)}mcp: { enabled: true }\n`);
    const after = gatewayYaml(`${keys}${hooks(1)}mcp: { enabled: true, maxSessions: 1 }
commands: { rateLimit: { perSecond: 1, burst: 1 } }
sse: { maxConnections: 1, keepalive: 100ms }
events: { retention: { maxEvents: 2 } }
`);
    const { gw, rewrite } = await reloadable(before, { resolver: tableResolver({ 'receiver.test': ['127.0.0.1'] }) });
    const alice = { 'X-Api-Key': 'alice-key' };
    const receiver = await startReceiver();
    await gw.log.append([1, 2, 3, 4, 5].map((n) => ({ event: { specversion: '1.0', id: `e${n}`, source: 'urn:test', type: 'ThingHappenedV1', time: new Date().toISOString(), datacontenttype: 'application/json', data: {} } })));
    // Retention never passes the webhook fan-out's durable position: let it save its position past the five first.
    await eventually(async () => Number(await gw.log.checkpoint('webhooks:fanout')) >= (await gw.log.head()), 10_000);
    expect((await rewrite(after)).outcome).toBe('applied');

    // Rate limit: one command passes the bucket (and fails later steps), the next is 429.
    const statuses = [];
    for (let i = 0; i < 2; i += 1) statuses.push((await post(`${gw.url}commands`, envelope('Nope', 'nope/1.0', {}), alice)).status);
    expect(statuses).toEqual([422, 429]);
    // Streams: one SSE stream; the pool is full for the second (503 STREAMS_EXHAUSTED).
    const first = await fetch(`${gw.url}events/stream`, { headers: alice });
    expect(first.status).toBe(200);
    expect((await fetch(`${gw.url}events/stream`, { headers: alice })).status).toBe(503);
    // A new stream takes the new keepalive (the default is 15 s): a comment comes well within the wait.
    const keepalive = (async () => {
      for await (const record of sseRecords(first.body as AsyncIterable<Uint8Array>)) if (record.data === '' && record.comments.length > 0) return true;
      return false;
    })();
    expect(await Promise.race([keepalive, new Promise((r) => setTimeout(() => r('no keepalive within 5 s'), 5_000))])).toBe(true);
    await first.body?.cancel().catch(() => undefined);
    // MCP: one session at most.
    await connect(gw, { 'X-API-Key': 'alice-key' }, false);
    await expect(connect(gw, { 'X-API-Key': 'alice-key' }, false)).rejects.toThrow();
    // Webhooks: one subscription at most.
    expect((await subscribe(gw, { webhook: { url: receiver.url() } }, alice)).status).toBe(201);
    expect((await subscribe(gw, { webhook: { url: receiver.url() } }, alice)).status).toBe(429);
    // Retention: pruned to two events at once.
    await eventually(async () => (await gw.log.query({}, 0, 10)).events.length === 2, 10_000);
  });
});

describe('A2A bounds follow a reload', () => {
  it('a lowered a2a.maxTasksPerPrincipal refuses the next new task (429 QUOTA_EXCEEDED naming the new bound), not only in the task store', async () => {
    const keys = 'auth:\n  type: apiKey\n  keys:\n    - { id: alice, key: alice-key, scopes: [read, write] }\n';
    const backend = track(await scriptedBackend((_req, res) => sendJson(res, 200, {})));
    const yaml = (max: number) => gatewayYaml(`${keys}a2a: { enabled: true, settle: 100ms, maxTasksPerPrincipal: ${max} }\n${legacy(backend.url, '/do')}`);
    const { gw, rewrite } = await reloadable(yaml(5));
    const newTask = () => getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'x-api-key': 'alice-key' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'hi' }] } } }),
    });
    const first = await newTask();
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ result: { task: { id: expect.any(String) } } });
    expect((await rewrite(yaml(1))).outcome).toBe('applied');
    const refused = await newTask();
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: { code: -32000, data: { code: 'QUOTA_EXCEEDED', details: { limit: 'a2a.maxTasksPerPrincipal', max: 1 } } } });
  });
});

describe('runtime-registered services and a reload', () => {
  it('leaves them alone, and refuses (changing nothing) a file that configures an id one of them holds', async () => {
    const { payments } = await exampleBackends();
    const yaml = (backends: string) => gatewayYaml(`registry: { allowNetworks: [127.0.0.0/8] }\n${backends}`);
    const { gw, rewrite } = await reloadable(yaml('backends: []\n'));
    const registered = await fetch(`${gw.url}services`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'pay', name: 'com.example.payments', endpoint: payments.url }) });
    expect(registered.status).toBe(201);
    const backend = track(await scriptedBackend((_req, res) => sendJson(res, 200, {})));
    expect((await rewrite(yaml(legacy(backend.url, '/do')))).outcome).toBe('applied');
    expect((await fetch(`${gw.url}services/pay`)).status).toBe(200);
    expect(gw.backends.get('pay')).toBeDefined();
    const before = (await (await fetch(`${gw.url}status`)).json()).config.generation;
    const refused = await rewrite(yaml(`${legacy(backend.url, '/do')}  - { id: pay, kind: proto, url: "${payments.url}" }\n`));
    expect(refused).toMatchObject({ outcome: 'invalid', problems: expect.stringContaining('pay is a service registered at runtime') });
    expect((await (await fetch(`${gw.url}status`)).json()).config.generation).toEqual(before);
    expect(gw.backends.isConfigured('pay')).toBe(false);
  });
});

describe('OAuth2 settings follow a reload', () => {
  it('a new audience takes effect at once: tokens for the old one are refused, tokens for the new one accepted, the keys beside them kept', async () => {
    const provider = track(await startTestIdp([{ id: 'svc', secret: 'svc-secret', scope: 'read' }]));
    const yaml = (audience: string) => gatewayYaml(`auth:
  type: oauth2
  keys:
    - { id: ops, key: ops-key, scopes: [read] }
  oauth2: { issuer: ${provider.issuer}, audience: ${audience} }
`);
    const token = async (aud: string) => {
      const now = Math.floor(Date.now() / 1000);
      return new SignJWT({ sub: 'svc', scope: 'read', iss: provider.issuer, aud, iat: now, exp: now + 300 })
        .setProtectedHeader({ alg: 'RS256', kid: provider.keys[0]!.kid })
        .sign(await importJWK(provider.keys[0]!, 'RS256'));
    };
    const { gw, rewrite } = await reloadable(yaml('old-audience'));
    const status = async (credential: Record<string, string>) => (await fetch(`${gw.url}events`, { headers: credential })).status;
    const [oldToken, newToken] = [await token('old-audience'), await token('new-audience')];
    expect(await status({ authorization: `Bearer ${oldToken}` })).toBe(200);
    expect(await status({ authorization: `Bearer ${newToken}` })).toBe(401);
    expect((await rewrite(yaml('new-audience'))).outcome).toBe('applied');
    expect(await status({ authorization: `Bearer ${oldToken}` })).toBe(401);
    expect(await status({ authorization: `Bearer ${newToken}` })).toBe(200);
    expect(await status({ 'X-Api-Key': 'ops-key' })).toBe(200);
  });
});

describe('several replicas', () => {
  it('each applies its own file; a runtime service registered on the shared store stays on both', async () => {
    const prefix = randomPrefix();
    track({ close: () => deletePrefix(SHARED_REDIS_URL, prefix) });
    const { payments } = await exampleBackends();
    const backend = track(await scriptedBackend((_req, res) => sendJson(res, 200, {})));
    const yaml = (backends: string) => gatewayYaml(`registry: { allowNetworks: [127.0.0.0/8] }\n${backends}`, `storage: { driver: redis, url: "${SHARED_REDIS_URL}", prefix: "${prefix}" }`);
    const a = await reloadable(yaml('backends: []\n'));
    const b = await reloadable(yaml('backends: []\n'));
    const registered = await fetch(`${a.gw.url}services`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: 'pay', name: 'com.example.payments', endpoint: payments.url }) });
    expect(registered.status).toBe(201);
    await eventually(async () => (await fetch(`${b.gw.url}services/pay`)).status === 200, 10_000);
    expect((await b.rewrite(yaml(legacy(backend.url, '/do')))).outcome).toBe('applied');
    expect((await fetch(`${b.gw.url}services/alpha`)).status).toBe(200);
    expect((await fetch(`${a.gw.url}services/alpha`)).status).toBe(404);
    for (const gw of [a.gw, b.gw]) expect((await fetch(`${gw.url}services/pay`)).status).toBe(200);
  });
});

describe('a reload under load', () => {
  it('answers every command sent while the mapping is reloaded again and again (201, never a 5xx), and delivers each once', async () => {
    const backend = track(await scriptedBackend((_req, res) => sendJson(res, 200, {})));
    const yaml = (path: string) => gatewayYaml(`commands: { dispatch: { timeout: 2s, concurrency: 8 } }\n${legacy(backend.url, path)}`);
    const { gw, rewrite } = await reloadable(yaml('/p0'));
    const sent = Array.from({ length: 60 }, () => envelope('DoThing', 'do-thing/1.0', {}));
    const posting = Promise.all(sent.map((command) => post(`${gw.url}commands`, command)));
    const reports = [];
    for (let i = 1; i <= 6; i += 1) reports.push(await rewrite(yaml(`/p${i}`)));
    const statuses = (await posting).map((answer) => answer.status);
    expect(statuses.every((status) => status === 201)).toBe(true);
    expect(reports.every((report) => report.outcome === 'applied')).toBe(true);
    await eventually(() => backend.received.length >= sent.length, 10_000);
    const ids = backend.received.map((r) => r.headers['x-request-id']);
    expect(new Set(ids).size).toBe(sent.length);
    expect(ids.length).toBe(sent.length);
  });
});
