/**
 * `auth.type: oauth2` against a real OpenID provider on loopback (`oidc-provider`, client
 * credentials): tokens verified against the provider's JWKS found by discovery, scopes mapped from
 * claims, every refusal a 401 naming its cause, key rotation and a JWKS outage without a restart,
 * introspection of opaque tokens, and the keys still accepted beside tokens.
 */
import { Writable } from 'node:stream';
import { base64url, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, SignJWT, type JWK } from 'jose';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { closeAll, eventually, gatewayYaml, getJson, startTestGateway, track } from '../support/gateway.ts';
import { grpcClient, unary } from '../support/grpc.ts';
import { startTestIdp, type TestClient, type TestIdp } from '../support/oidc-provider.ts';
import * as grpc from '@grpc/grpc-js';

afterEach(closeAll);

const reader: TestClient = { id: 'reader-svc', secret: 'reader-secret', scope: 'read' };
const writer: TestClient = { id: 'writer-svc', secret: 'writer-secret', scope: 'read write' };
const roles: TestClient = { id: 'roles-svc', secret: 'roles-secret', scope: 'openid', roles: ['gateway-reader', 'gateway-operator'] };

async function idp(): Promise<TestIdp> {
  return track(await startTestIdp([reader, writer, roles]));
}

function oauth2Yaml(provider: TestIdp, extra = '', authExtra = ''): string {
  return gatewayYaml(`auth:
  type: oauth2
  keys:
    - { id: ops, key: ops-key, scopes: [read, write, admin] }
  oauth2:
    issuer: ${provider.issuer}
    audience: proto-gateway
    jwksCooldown: 10ms
${authExtra}
${extra}`);
}

const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });

/** Signs a token with `key` (a private JWK of the provider, or another), claims defaulting to a valid one. */
async function craft(provider: TestIdp, claims: Record<string, unknown>, key: JWK = provider.keys[0]!, header: Record<string, unknown> = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ sub: 'crafted', scope: 'read', iss: provider.issuer, aud: 'proto-gateway', iat: now, exp: now + 300, ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: key.kid, ...header })
    .sign(await importJWK(key, 'RS256'));
}

function expectRefused(res: { status: number; headers: Headers; body: any }, reason: string, words: RegExp): void {
  expect(res.status, reason).toBe(401);
  expect(res.body.error).toMatchObject({ code: 'UNAUTHENTICATED', details: { reason } });
  const challenge = res.headers.get('www-authenticate') ?? '';
  expect(challenge).toMatch(/^Bearer /);
  expect(challenge).toContain('error="invalid_token"');
  expect(challenge).toMatch(new RegExp(`error_description="[^"]*${words.source}`));
  expect(challenge).toContain('resource_metadata="');
}

describe('auth.type oauth2: bearer tokens of the identity provider', () => {
  it('accepts a token from the provider (JWKS found by OIDC discovery) with the scopes its scope claim grants', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider));
    const readToken = await provider.token(reader);
    expect((await getJson(`${gw.url}events`, bearer(readToken))).status).toBe(200);
    // read only: a write is 403 insufficient_scope naming the scope (RFC 6750 §3.1)
    const post = await getJson(`${gw.url}subscriptions`, { method: 'POST', ...bearer(readToken), body: '{}', headers: { ...bearer(readToken).headers, 'content-type': 'application/json' } });
    expect(post.status).toBe(403);
    expect(post.body.error).toMatchObject({ code: 'FORBIDDEN', details: { scope: 'write' } });
    expect(post.headers.get('www-authenticate')).toMatch(/^Bearer .*error="insufficient_scope".*scope="write"/);
    // a write token passes the scope check (then the body's own checks answer)
    const writeToken = await provider.token(writer);
    const write = await getJson(`${gw.url}subscriptions`, { method: 'POST', body: '{}', headers: { ...bearer(writeToken).headers, 'content-type': 'application/json' } });
    expect(write.status).toBe(400);
  });

  it('still accepts the configured API keys beside tokens', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider));
    expect((await getJson(`${gw.url}events`, { headers: { 'x-api-key': 'ops-key' } })).status).toBe(200);
    expect((await getJson(`${gw.url}events`, bearer('ops-key'))).status).toBe(200);
  });

  it('without credentials: 401 with a Bearer challenge pointing at the protected-resource metadata (RFC 9728 §5.1)', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider));
    const res = await getJson(`${gw.url}events`);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toBe(`Bearer resource_metadata="${gw.url}.well-known/oauth-protected-resource"`);
  });

  it('maps a nested claim through the scope table (Keycloak realm_access.roles)', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider, '', `    scopeClaim: realm_access.roles
    scopeMap:
      gateway-reader: [read]
      gateway-operator: [write]
      gateway-admin: [admin]`));
    const token = await provider.token(roles, 'openid');
    expect(decodeJwt(token).realm_access).toEqual({ roles: ['gateway-reader', 'gateway-operator'] });
    expect((await getJson(`${gw.url}events`, bearer(token))).status).toBe(200);
    const admin = await getJson(`${gw.url}services`, { method: 'POST', body: '{}', headers: { ...bearer(token).headers, 'content-type': 'application/json' } });
    expect(admin.status).toBe(403);
    expect(admin.body.error.details).toEqual({ scope: 'admin' });
    // the standard scope claim grants nothing with this table: a reader token reads nothing
    expect((await getJson(`${gw.url}events`, bearer(await provider.token(reader)))).status).toBe(403);
  });

  it('maps an scp array (Azure AD style) and a custom principal claim', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider, '', `    scopeClaim: scp
    principalClaim: azp
    scopeMap: { Events.Read: [read] }`));
    const token = await craft(provider, { scp: ['Events.Read'], azp: 'app-1', scope: undefined });
    expect((await getJson(`${gw.url}events`, bearer(token))).status).toBe(200);
    expect((await getJson(`${gw.url}events`, bearer(await craft(provider, { scp: 'Events.Read', azp: undefined })))).status).toBe(401);
  });

  it('refuses each bad token with a 401 naming why', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider, '', '    clockTolerance: 0s'));
    const now = Math.floor(Date.now() / 1000);
    const get = (token: string) => getJson(`${gw.url}events`, bearer(token));
    expectRefused(await get(await craft(provider, { exp: now - 60, iat: now - 120 })), 'expired', /expired/);
    expectRefused(await get(await craft(provider, { aud: 'someone-else' })), 'audience', /audience/);
    expectRefused(await get(await craft(provider, { iss: 'http://127.0.0.1:1/other' })), 'issuer', /issuer/);
    expectRefused(await get(await craft(provider, { nbf: now + 600 })), 'not_yet_valid', /not valid yet/);
    // a real token of the provider with its payload changed (scope raised): the signature fails
    const real = await provider.token(reader);
    const [h, , s] = real.split('.');
    const raised = base64url.encode(JSON.stringify({ ...decodeJwt(real), scope: 'read write admin' }));
    expectRefused(await get(`${h}.${raised}.${s}`), 'signature', /signature/);
    // alg none: unsigned
    const unsigned = `${base64url.encode(JSON.stringify({ alg: 'none', typ: 'JWT' }))}.${base64url.encode(JSON.stringify(decodeJwt(real)))}.`;
    expectRefused(await get(unsigned), 'algorithm', /algorithm/);
    // HS256 keyed with the provider's public key (the algorithm-confusion attack)
    const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = provider.keys[0]!;
    const confused = await new SignJWT({ ...decodeJwt(real) }).setProtectedHeader({ alg: 'HS256', kid: provider.keys[0]!.kid })
      .sign(new TextEncoder().encode(JSON.stringify(publicJwk)));
    expectRefused(await get(confused), 'algorithm', /algorithm/);
    // a key the provider never published
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const stranger = { ...(await exportJWK(privateKey)), kid: 'not-published' };
    expectRefused(await get(await craft(provider, {}, stranger)), 'unknown_key', /unknown key/);
    expectRefused(await get('not.a-jwt'), 'malformed', /malformed/);
    expectRefused(await get('opaque-token-without-introspection'), 'malformed', /malformed/);
  });

  it('accepts new tokens after the provider rotates its key, without a restart; old ones still verify', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider));
    const before = await provider.token(reader);
    expect((await getJson(`${gw.url}events`, bearer(before))).status).toBe(200);
    await provider.rotate();
    const after = await provider.token(reader);
    expect(decodeProtectedHeader(after).kid).not.toBe(decodeProtectedHeader(before).kid);
    expect((await getJson(`${gw.url}events`, bearer(after))).status).toBe(200);
    expect((await getJson(`${gw.url}events`, bearer(before))).status).toBe(200);
  });

  it('JWKS endpoint down: known keys keep working, a new kid is a 401 (not a 5xx)', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider));
    const known = await provider.token(reader);
    expect((await getJson(`${gw.url}events`, bearer(known))).status).toBe(200);
    provider.setJwksDown(true);
    await provider.rotate();
    const unknown = await provider.token(reader);
    expectRefused(await getJson(`${gw.url}events`, bearer(unknown)), 'unknown_key', /unknown key/);
    expect((await getJson(`${gw.url}events`, bearer(known))).status).toBe(200);
    // back up: the new key is read on an unknown kid once the cooldown (10ms here) has passed
    provider.setJwksDown(false);
    await eventually(async () => (await getJson(`${gw.url}events`, bearer(unknown))).status === 200);
  });

  it('re-reads the JWKS for unknown kids at most once per jwksCooldown (forged kids cannot flood the provider)', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider).replace('jwksCooldown: 10ms', 'jwksCooldown: 10m'));
    expect((await getJson(`${gw.url}events`, bearer(await provider.token(reader)))).status).toBe(200);
    const readsBefore = provider.jwksReads();
    const { privateKey } = await generateKeyPair('RS256', { extractable: true });
    const jwk = await exportJWK(privateKey);
    for (let i = 0; i < 20; i += 1) {
      const res = await getJson(`${gw.url}events`, bearer(await craft(provider, {}, { ...jwk, kid: `forged-${i}` })));
      expect(res.status).toBe(401);
    }
    expect(provider.jwksReads() - readsBefore).toBeLessThanOrEqual(1);
  });

  it('introspects opaque tokens (RFC 7662) at the discovered endpoint, as the gateway client', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider, '', '    audience: [proto-gateway, opaque-gateway]\n    clientId: gateway\n    clientSecret: gateway-secret').replace('    audience: proto-gateway\n', ''));
    const opaque = await provider.opaqueToken(reader);
    expect(opaque.split('.')).toHaveLength(1);
    expect((await getJson(`${gw.url}events`, bearer(opaque))).status).toBe(200);
    expect((await getJson(`${gw.url}events`, bearer(opaque))).status).toBe(200);
    expectRefused(await getJson(`${gw.url}events`, bearer('never-issued-by-the-provider')), 'inactive', /not active/);
  });

  it('advertises oauth2: PROTO.authentication, the MCP block, the protected-resource metadata', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider, 'mcp: { enabled: true }'));
    const manifest = (await getJson(`${gw.url}.well-known/proto`)).body;
    expect(manifest.PROTO.authentication).toEqual({ type: 'oauth2', tokenUrl: provider.tokenUrl, scopes: ['read', 'write', 'admin'] });
    const entry = Object.values(manifest.PROTO.services as Record<string, any>).find((service) => service.mcp);
    expect(entry.mcp.authentication).toEqual({ type: 'oauth2', tokenUrl: provider.tokenUrl, scopes: ['read', 'write', 'admin'] });
    const metadata = await getJson(`${gw.url}.well-known/oauth-protected-resource`);
    expect(metadata.status).toBe(200);
    expect(metadata.body).toMatchObject({
      resource: gw.url,
      authorization_servers: [provider.issuer],
      scopes_supported: ['read', 'write', 'admin'],
      bearer_methods_supported: ['header'],
    });
    expect((await getJson(`${gw.url}.well-known/oauth-protected-resource/mcp`)).body.resource).toBe(`${gw.url}mcp`);
    const mcp = await fetch(`${gw.url}mcp`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: '{}' });
    expect(mcp.status).toBe(401);
    expect(mcp.headers.get('www-authenticate')).toContain(`resource_metadata="${gw.url}.well-known/oauth-protected-resource"`);
  });

  it('the A2A agent card declares the oauth2 (client credentials) and openIdConnect schemes, and the key beside them; A2A calls take the token', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider, 'a2a: { enabled: true }'));
    const card = (await getJson(`${gw.url}.well-known/agent-card.json`)).body;
    expect(card.securitySchemes.oauth2.oauth2SecurityScheme.flows.clientCredentials).toMatchObject({
      tokenUrl: provider.tokenUrl,
      scopes: { read: expect.any(String), write: expect.any(String), admin: expect.any(String) },
    });
    expect(card.securitySchemes.openIdConnect.openIdConnectSecurityScheme.openIdConnectUrl).toBe(`${provider.issuer}/.well-known/openid-configuration`);
    expect(card.securitySchemes.apiKey).toBeDefined();
    const call = (token?: string) => getJson(`${gw.url}a2a`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'a2a-version': '1.0', ...(token && { authorization: `Bearer ${token}` }) },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ListTasks', params: {} }),
    });
    expect((await call()).status).toBe(401);
    const wrongIssuer = await call(await craft(provider, { iss: 'http://127.0.0.1:1/x' }));
    // The A2A endpoint answers its refusals as JSON-RPC errors: the catalogue error is the error's data.
    expectRefused({ ...wrongIssuer, body: { error: wrongIssuer.body.error.data } }, 'issuer', /issuer/);
    const ok = await call(await provider.token(reader));
    expect(ok.status).toBe(200);
    expect(ok.body.error).toBeUndefined();
  });

  it('takes the token from the query parameter only when auth.oauth2.queryParam is set (EventSource)', async () => {
    const provider = await idp();
    const token = await provider.token(reader);
    const closed = await startTestGateway(oauth2Yaml(provider));
    expect((await fetch(`${closed.url}events?access_token=${token}`)).status).toBe(401);
    const open = await startTestGateway(oauth2Yaml(provider, '', '    queryParam: access_token'));
    const stream = await fetch(`${open.url}events/stream?access_token=${token}`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await stream.body?.cancel();
  });

  it('admits gRPC calls by the token in the call metadata', async () => {
    const provider = await idp();
    const gw = await startTestGateway(oauth2Yaml(provider, 'grpc: { host: 127.0.0.1, port: 0 }'));
    const client = grpcClient(gw.grpc!.port);
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${await provider.token(reader)}`);
    await expect(unary(client, 'ListEvents', {}, md)).resolves.toBeDefined();
    const bad = new grpc.Metadata();
    bad.set('authorization', `Bearer ${await craft(provider, { aud: 'someone-else' })}`);
    await expect(unary(client, 'ListEvents', {}, bad)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });

  it('never logs a token: refusals and admissions log the principal id at most', async () => {
    const provider = await idp();
    const lines: string[] = [];
    const sink = new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) });
    const gw = await startTestGateway(oauth2Yaml(provider), {}, undefined, { logger: pino({ level: 'trace' }, sink) });
    const good = await provider.token(reader);
    const bad = await craft(provider, { aud: 'someone-else' });
    await getJson(`${gw.url}events`, bearer(good));
    await getJson(`${gw.url}events`, bearer(bad));
    await getJson(`${gw.url}nowhere`, bearer(good));
    const text = lines.join('');
    expect(text.length).toBeGreaterThan(0);
    for (const token of [good, bad]) for (const part of token.split('.')) expect(text).not.toContain(part);
  });
});
