/**
 * A stream never outlives the credential that opened it: a stream opened with an identity
 * provider's token ends when the token expires (`exp` plus `clockTolerance`), on SSE and gRPC
 * alike, while a stream opened with a key stays; a reload that changes `auth.oauth2` ends the token
 * streams (their tokens are checked anew when they reconnect), a reload that only adds a key does
 * not. Against a real OpenID provider on loopback (its signing key signs the short-lived tokens).
 */
import * as grpc from '@grpc/grpc-js';
import { importJWK, SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Admission } from '../../src/edge/admission.ts';
import { MAX_CACHE_MS } from '../../src/edge/oauth2/introspection.ts';
import { oauth2Defaults } from '../../src/edge/oauth2/oauth2-config.ts';
import { OAuth2Identity } from '../../src/edge/oauth2/oauth2-identity.ts';
import type { Principal } from '../../src/edge/credentials.ts';
import type { SlotEnd } from '../../src/edge/quota.ts';
import { NO_ADMISSION_METRICS } from '../../src/metrics/admission.ts';
import { closeAll, eventually, gatewayYaml, reloadable, startTestGateway, track } from '../support/gateway.ts';
import { grpcClient, subscribe } from '../support/grpc.ts';
import { startTestIdp, type TestIdp } from '../support/oidc-provider.ts';

afterEach(() => {
  vi.useRealTimers();
  return closeAll();
});

function yaml(provider: TestIdp, audience = 'proto-gateway', keys = ''): string {
  return gatewayYaml(`auth:
  type: oauth2
  keys:
    - { id: ops, key: ops-key, scopes: [read, write, admin] }
${keys}
  oauth2: { issuer: ${provider.issuer}, audience: ${audience}, clockTolerance: 0s }
grpc: { host: 127.0.0.1, port: 0 }
`);
}

/** A read token of the provider for `audience`, valid for `seconds` from now. */
async function token(provider: TestIdp, seconds: number, audience = 'proto-gateway'): Promise<{ token: string; expMs: number }> {
  const exp = Math.floor(Date.now() / 1000) + seconds;
  const signed = await new SignJWT({ sub: 'svc', scope: 'read', iss: provider.issuer, aud: audience, iat: exp - seconds, exp })
    .setProtectedHeader({ alg: 'RS256', kid: provider.keys[0]!.kid })
    .sign(await importJWK(provider.keys[0]!, 'RS256'));
  return { token: signed, expMs: exp * 1000 };
}

/** Opens an SSE stream; `ended()` is true once the server has ended it. */
async function openStream(url: string, headers: Record<string, string>) {
  const controller = new AbortController();
  track({ close: async () => controller.abort() });
  const res = await fetch(`${url}events/stream`, { headers, signal: controller.signal });
  expect(res.status).toBe(200);
  let endedAt: number | undefined;
  const reader = res.body!.getReader();
  void (async () => {
    for (;;) if ((await reader.read()).done) break;
  })().catch(() => {}).finally(() => (endedAt = Date.now()));
  return { ended: () => endedAt !== undefined, endedAt: () => endedAt };
}

describe('a token stream ends when its token expires', () => {
  it('SSE: the stream opened with a token ends once the token expires and the token is then refused; a key stream stays', async () => {
    const provider = track(await startTestIdp([]));
    const gw = await startTestGateway(yaml(provider));
    const { token: short, expMs } = await token(provider, 2);
    const tokenStream = await openStream(gw.url, { authorization: `Bearer ${short}` });
    const keyStream = await openStream(gw.url, { 'x-api-key': 'ops-key' });
    await eventually(() => tokenStream.ended(), 10_000);
    expect(tokenStream.endedAt()).toBeGreaterThanOrEqual(expMs);
    expect(keyStream.ended()).toBe(false);
    expect((await fetch(`${gw.url}events/stream`, { headers: { authorization: `Bearer ${short}` } })).status).toBe(401);
  });

  it('gRPC Subscribe: the call ends UNAUTHENTICATED (proto-error-code in the trailers) once the token expires', async () => {
    const provider = track(await startTestIdp([]));
    const gw = await startTestGateway(yaml(provider));
    const { token: short, expMs } = await token(provider, 2);
    const md = new grpc.Metadata();
    md.set('authorization', `Bearer ${short}`);
    const stream = subscribe(grpcClient(gw.grpc!.port), {}, md);
    const keyMd = new grpc.Metadata();
    keyMd.set('x-api-key', 'ops-key');
    const keyStream = subscribe(grpcClient(gw.grpc!.port), {}, keyMd);
    await eventually(() => stream.error() !== undefined, 10_000);
    expect(Date.now()).toBeGreaterThanOrEqual(expMs);
    expect(stream.error()!.code).toBe(grpc.status.UNAUTHENTICATED);
    expect(stream.error()!.metadata.get('proto-error-code')).toEqual(['UNAUTHENTICATED']);
    expect(stream.error()!.details).toMatch(/expired/);
    expect(keyStream.error()).toBeUndefined();
  });
});

describe('an opaque token\'s stream', () => {
  it('is asked back within the introspection cache\'s lifetime (a token revoked at the provider ends its stream then), a JWT\'s at its exp', async () => {
    const client = { id: 'reader-svc', secret: 'reader-secret', scope: 'read' };
    const provider = track(await startTestIdp([client]));
    const identity = new OAuth2Identity({
      config: oauth2Defaults({ issuer: provider.issuer, audience: ['proto-gateway', 'opaque-gateway'], clientId: 'gateway', clientSecret: 'gateway-secret' }),
      publicUrl: () => 'http://127.0.0.1/',
      keyIds: [],
    });
    const before = Date.now();
    const opaque = await identity.verifier({ headers: { authorization: `Bearer ${await provider.opaqueToken(client)}` } });
    expect(opaque!.tokenExpiresAtMs).toBeGreaterThan(before);
    expect(opaque!.tokenExpiresAtMs).toBeLessThanOrEqual(Date.now() + MAX_CACHE_MS);
    const { token: jwt, expMs } = await token(provider, 3600);
    expect((await identity.verifier({ headers: { authorization: `Bearer ${jwt}` } }))!.tokenExpiresAtMs).toBe(expMs + 30_000);
  });
});

describe('a reload and token streams', () => {
  it('a change of auth.oauth2 ends the token streams, not the key streams; adding a key alone ends none', async () => {
    const provider = track(await startTestIdp([]));
    const { gw, rewrite } = await reloadable(yaml(provider));
    const { token: long } = await token(provider, 300);
    const tokenStream = await openStream(gw.url, { authorization: `Bearer ${long}` });
    const keyStream = await openStream(gw.url, { 'x-api-key': 'ops-key' });
    expect((await rewrite(yaml(provider, 'proto-gateway', '    - { id: extra, key: extra-key, scopes: [read] }'))).outcome).toBe('applied');
    // Give a wrongly ended stream the time to show it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(tokenStream.ended()).toBe(false);
    expect((await rewrite(yaml(provider, 'another-audience'))).outcome).toBe('applied');
    await eventually(() => tokenStream.ended(), 5_000);
    expect(keyStream.ended()).toBe(false);
  });
});

describe('QuotaPool: token slots', () => {
  const principal = (tokenExpiresAtMs?: number): Principal => ({ id: 'svc', scopes: new Set(['read']), ...(tokenExpiresAtMs !== undefined && { tokenExpiresAtMs }) });
  const admission = () => new Admission({
    config: {
      auth: { type: 'apiKey', header: 'X-Api-Key', keys: [] },
      sse: { keepaliveMs: 15_000, maxBufferedBytes: 1 << 20, maxConnections: 10, maxConnectionsPerPrincipal: 5, closeOnTerminal: false },
      mcp: { enabled: true, maxSessions: 10, maxSessionsPerPrincipal: 5, idleTimeoutMs: 60_000, allowedHosts: [] },
    },
    metrics: NO_ADMISSION_METRICS,
  });

  it('waits in steps for an expiry further off than a timer can wait (30 days), then ends the slot once with "expired"', () => {
    vi.useFakeTimers();
    const pool = admission().streams;
    const ends: SlotEnd[] = [];
    const slot = pool.take(principal(Date.now() + 30 * 86_400_000), (reason) => {
      ends.push(reason);
      slot.release();
    });
    // A hostile exp far beyond any timer (a token claiming to live for ever) never ends early, nor spins.
    const forever: SlotEnd[] = [];
    const farSlot = pool.take(principal(Number.MAX_VALUE), (reason) => forever.push(reason));
    vi.advanceTimersByTime(25 * 86_400_000);
    expect(ends).toEqual([]);
    vi.advanceTimersByTime(5 * 86_400_000);
    expect(ends).toEqual(['expired']);
    expect(forever).toEqual([]);
    farSlot.release();
    expect(pool.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('an already expired token ends on a later turn, never inside take; a released slot is never ended; revokeTokens ends token slots only', () => {
    vi.useFakeTimers();
    const pool = admission().streams;
    const ends: string[] = [];
    const past = pool.take(principal(Date.now() - 1), (reason) => ends.push(`past:${reason}`));
    expect(ends).toEqual([]);
    const released = pool.take(principal(Date.now() + 1_000), (reason) => ends.push(`released:${reason}`));
    released.release();
    const noExp = pool.take(principal(Infinity), (reason) => ends.push(`noexp:${reason}`));
    const key = pool.take({ id: 'ops', scopes: new Set(['read']) }, (reason) => ends.push(`key:${reason}`));
    vi.advanceTimersByTime(2_000);
    expect(ends).toEqual(['past:expired']);
    past.release();
    expect(pool.revokeTokens()).toEqual(['svc']);
    expect(ends).toEqual(['past:expired', 'noexp:revoked']);
    noExp.release();
    key.release();
  });
});
