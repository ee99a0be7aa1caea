import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { judgeAttempt, MAX_RETRY_AFTER_MS, parseRetryAfter, retryDelayMs } from '../../../src/egress/retry-policy.ts';
import { signingKey, webhookHeaders } from '../../../src/bridges/webhooks/signer.ts';

const SECRET = `whsec_${Buffer.from('a signing key of 24 bytes').toString('base64')}`;

describe('Standard Webhooks signatures', () => {
  it('verify with the standardwebhooks reference implementation', () => {
    const body = JSON.stringify({ id: 'evt-1', type: 'OrderPlacedV1', data: { ü: 'ß' } });
    const headers = webhookHeaders('msg_1', Math.floor(Date.now() / 1000), body, SECRET);
    expect(new Webhook(SECRET).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(SECRET).verify(`${body} `, headers)).toThrow();
  });

  it('use a whsec_ secret as base64 after the prefix, any other string as UTF-8 bytes', () => {
    expect(signingKey(SECRET).toString()).toBe('a signing key of 24 bytes');
    expect(signingKey('plain-secret')).toEqual(Buffer.from('plain-secret', 'utf8'));
    const headers = webhookHeaders('msg_1', 1_700_000_000, '{}', 'plain-secret');
    expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(new Uint8Array(Buffer.from('plain-secret')), { format: 'raw' }).sign('msg_1', new Date(1_700_000_000_000), '{}')).toBe(headers['webhook-signature']);
  });

  it('carry id and timestamp, and no signature without a secret', () => {
    expect(webhookHeaders('msg_9', 42, '{}')).toEqual({ 'content-type': 'application/json', 'webhook-id': 'msg_9', 'webhook-timestamp': '42' });
  });
});

describe('retry policy', () => {
  const schedule = [1000, 5000];

  it('N schedule entries are N retries, each jittered by at most ±10 %', () => {
    expect(retryDelayMs(schedule, 1, () => 0)).toBe(900);
    expect(retryDelayMs(schedule, 1, () => 1)).toBe(1100);
    expect(retryDelayMs(schedule, 2, () => 0.5)).toBe(5000);
    expect(retryDelayMs(schedule, 3)).toBeUndefined();
  });

  it('reads Retry-After as seconds or an HTTP date, capped at 24 h', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(parseRetryAfter('3', now)).toBe(3000);
    expect(parseRetryAfter('Tue, 01 Jan 2030 00:00:10 GMT', now)).toBe(10_000);
    expect(parseRetryAfter('999999999', now)).toBe(MAX_RETRY_AFTER_MS);
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter(undefined, now)).toBeUndefined();
  });

  it('judges answers: 2xx succeeds, 410 is gone, 3xx and 5xx retry, the last failure is dead', () => {
    const at = (status: number, attempts = 1, retryAfterMs?: number) => judgeAttempt({ status, retryAfterMs }, attempts, schedule, 0, () => 0.5);
    expect(at(204)).toEqual({ kind: 'succeeded', outcome: { status: 'succeeded', lastStatus: 204 } });
    expect(at(410)).toMatchObject({ kind: 'gone', outcome: { status: 'dead', lastStatus: 410 } });
    expect(at(302)).toMatchObject({ kind: 'failed', outcome: { status: 'pending', nextAttemptMs: 1000, lastStatus: 302, lastError: expect.stringContaining('redirects are not followed') } });
    expect(at(500, 2)).toMatchObject({ outcome: { status: 'pending', nextAttemptMs: 5000 } });
    expect(at(500, 3)).toMatchObject({ kind: 'failed', outcome: { status: 'dead', lastStatus: 500 } });
    expect(judgeAttempt({ error: 'ECONNREFUSED' }, 3, schedule, 0)).toMatchObject({ outcome: { status: 'dead', lastError: 'ECONNREFUSED' } });
  });

  it('honours Retry-After on 429 and 503 only, never retrying sooner than the schedule', () => {
    const at = (status: number, retryAfterMs: number) => judgeAttempt({ status, retryAfterMs }, 1, schedule, 0, () => 0.5).outcome.nextAttemptMs;
    expect(at(429, 60_000)).toBe(60_000);
    expect(at(503, 60_000)).toBe(60_000);
    expect(at(500, 60_000)).toBe(1000);
    expect(at(429, 10)).toBe(1000);
  });
});
