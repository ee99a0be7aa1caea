/**
 * The admission path under a configuration reload: the keys and the stream pool's bounds are
 * replaced in one step; a removed or changed key is refused at once and the streams it holds are
 * ended (`QuotaPool.revoke`); the other keys and their streams are untouched.
 */
import { describe, expect, it } from 'vitest';
import type { AuthConfig, GatewayConfig } from '../../src/config/types.ts';
import { Admission, revokedPrincipals } from '../../src/edge/admission.ts';
import { ANONYMOUS } from '../../src/edge/credentials.ts';
import { NO_ADMISSION_METRICS } from '../../src/metrics/admission.ts';

const sse = { keepaliveMs: 15_000, maxBufferedBytes: 1 << 20, maxConnections: 10, maxConnectionsPerPrincipal: 5, closeOnTerminal: false };
const mcp = { enabled: true, maxSessions: 10, maxSessionsPerPrincipal: 5, idleTimeoutMs: 60_000, allowedHosts: [] };

function auth(keys: AuthConfig['keys'], type: AuthConfig['type'] = 'apiKey'): AuthConfig {
  return { type, header: 'X-Api-Key', keys };
}

function config(a: AuthConfig, limits: Partial<typeof sse> = {}): Pick<GatewayConfig, 'auth' | 'sse' | 'mcp'> {
  return { auth: a, sse: { ...sse, ...limits }, mcp };
}

const presented = (key: string) => ({ headers: { 'x-api-key': key } });

describe('Admission.reconfigure', () => {
  it('refuses a removed or rotated key at once and ends its streams; a kept key and its streams stay', async () => {
    const admission = new Admission({
      config: config(auth([{ id: 'keep', key: 'k1', scopes: ['read'] }, { id: 'rot', key: 'old', scopes: ['read'] }, { id: 'gone', key: 'g', scopes: ['read'] }])),
      metrics: NO_ADMISSION_METRICS,
    });
    const ended: string[] = [];
    const slots = ['k1', 'old', 'g'].map(async (key) => {
      const principal = await admission.authenticate(presented(key));
      const slot = admission.streams.take(principal, () => {
        ended.push(principal.id);
        slot.release();
      });
      return slot;
    });
    await Promise.all(slots);
    expect(admission.streams.size).toBe(3);
    const revoked = admission.reconfigure({ config: config(auth([{ id: 'keep', key: 'k1', scopes: ['read'] }, { id: 'rot', key: 'new', scopes: ['read'] }])) });
    expect(revoked.sort()).toEqual(['gone', 'rot']);
    expect(ended.sort()).toEqual(['gone', 'rot']);
    expect(admission.streams.size).toBe(1);
    await expect(admission.authenticate(presented('old'))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    await expect(admission.authenticate(presented('g'))).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    expect((await admission.authenticate(presented('new'))).id).toBe('rot');
    expect((await admission.authenticate(presented('k1'))).id).toBe('keep');
  });

  it('ends the streams of a key whose scopes changed, and applies new stream bounds to new streams only', async () => {
    const admission = new Admission({ config: config(auth([{ id: 'a', key: 'ka', scopes: ['read', 'write'] }])), metrics: NO_ADMISSION_METRICS });
    const principal = await admission.authenticate(presented('ka'));
    const held = [admission.streams.take(principal), admission.streams.take(principal)];
    admission.reconfigure({ config: config(auth([{ id: 'a', key: 'ka', scopes: ['write', 'read'] }]), { maxConnections: 2, maxConnectionsPerPrincipal: 1 }) });
    // Same scopes in another order: nothing revoked; the two held slots stay, a third is refused (the pool is full).
    expect(admission.streams.size).toBe(2);
    expect(() => admission.streams.take(principal)).toThrow(expect.objectContaining({ code: 'STREAMS_EXHAUSTED' }));
    for (const slot of held) slot.release();
    expect(revokedPrincipals(auth([{ id: 'a', key: 'ka', scopes: ['read', 'write'] }]), auth([{ id: 'a', key: 'ka', scopes: ['read'] }]))).toEqual(['a']);
  });

  it('a change of auth.type revokes every key and the anonymous caller', () => {
    expect(revokedPrincipals(auth([], 'none'), auth([{ id: 'a', key: 'ka', scopes: ['read'] }]))).toEqual([ANONYMOUS.id]);
  });

  it('revoke ends only slots taken with an end callback, once, and never one already released', () => {
    const admission = new Admission({ config: config(auth([], 'none')), metrics: NO_ADMISSION_METRICS });
    let ends = 0;
    const released = admission.streams.take(ANONYMOUS, () => (ends += 100));
    released.release();
    const plain = admission.streams.take(ANONYMOUS);
    const ending = admission.streams.take(ANONYMOUS, () => {
      ends += 1;
      ending.release();
    });
    expect(admission.streams.revoke(ANONYMOUS.id)).toBe(1);
    expect(admission.streams.revoke(ANONYMOUS.id)).toBe(0);
    expect(ends).toBe(1);
    expect(admission.streams.size).toBe(1);
    plain.release();
  });
});
