import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { canonicalJson, commandFingerprint } from '../../src/commands/fingerprint.ts';
import { RateLimiter } from '../../src/commands/rate-limit.ts';
import { parseRetryAfter, retryDelayMs } from '../../src/commands/retry-schedule.ts';
import { isProtoError } from '../../src/errors.ts';

describe('fingerprint', () => {
  it('is canonical: key order does not matter, values do', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}');
    const base = { type: 'T', source: 's', dataschema: 't/1', data: { a: 1, b: 2 } };
    expect(commandFingerprint(base)).toBe(commandFingerprint({ ...base, data: { b: 2, a: 1 } }));
    expect(commandFingerprint(base)).not.toBe(commandFingerprint({ ...base, data: { a: 1, b: 3 } }));
    expect(commandFingerprint(base)).not.toBe(commandFingerprint({ ...base, source: 'other' }));
  });

  it('is the value stored records hold: sha256 as base64url of the canonical JSON, undefined members left out as JSON does', () => {
    // Computed by the first implementation: an idempotency record stored before a change must keep matching its repeats.
    expect(commandFingerprint({ type: 'T', source: 's', dataschema: 't/1', data: { b: [1, { y: 'é', x: null }], a: 'x', u: undefined } }))
      .toBe('ydQaM1uFhli4AKYUIr4amoUEhaUBpgTumuXgyAcE-5E');
    expect(canonicalJson([1, undefined, { b: undefined, a: [undefined, 'q"'] }])).toBe('[1,null,{"a":[null,"q\\""]}]');
  });

  it('orders keys as Array.prototype.sort does (UTF-16 code units), small objects and large, any characters', () => {
    // The first implementation, with the builtin sort (JSON.stringify cannot be the reference: an object lists integer-like keys first).
    const bySort = (value: unknown): string => {
      if (value === null || typeof value !== 'object') return JSON.stringify(value);
      if (Array.isArray(value)) return `[${value.map((item) => bySort(item ?? null)).join(',')}]`;
      const members = Object.keys(value).sort().filter((key) => (value as Record<string, unknown>)[key] !== undefined);
      return `{${members.map((key) => `${JSON.stringify(key)}:${bySort((value as Record<string, unknown>)[key])}`).join(',')}}`;
    };
    fc.assert(
      fc.property(fc.jsonValue(), fc.dictionary(fc.string({ unit: 'binary' }), fc.integer(), { maxKeys: 40 }), (value, wide) => {
        for (const doc of [value, wide, { wide, value }]) expect(canonicalJson(doc)).toBe(bySort(doc));
      }),
    );
  });
});

describe('retry schedule', () => {
  it('uses the Nth delay for the Nth retry, with ±20 % jitter, then gives up', () => {
    const schedule = [1000, 5000];
    expect(retryDelayMs(schedule, 1, 0, () => 0)).toBe(800);
    expect(retryDelayMs(schedule, 1, 0, () => 0.999999)).toBe(1200);
    expect(retryDelayMs(schedule, 2, 0, () => 0.5)).toBe(5000);
    expect(retryDelayMs(schedule, 3, 0, () => 0.5)).toBeUndefined();
    expect(retryDelayMs([], 1)).toBeUndefined();
  });

  it('never retries before Retry-After (capped at an hour)', () => {
    expect(retryDelayMs([1000], 1, 7000, () => 0.5)).toBe(7000);
    expect(retryDelayMs([1000], 1, 10 * 3_600_000, () => 0.5)).toBe(3_600_000);
    expect(parseRetryAfter('3')).toBe(3000);
    expect(parseRetryAfter(new Date(Date.now() + 10_000).toUTCString())).toBeGreaterThan(8000);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});

describe('token bucket', () => {
  it('allows the burst, refills at perSecond, and says when to retry', () => {
    let now = 0;
    const limiter = new RateLimiter({ perSecond: 2, burst: 3, now: () => now });
    for (let i = 0; i < 3; i++) limiter.take('p');
    let refusal: unknown;
    try {
      limiter.take('p');
    } catch (err) {
      refusal = err;
    }
    expect(isProtoError(refusal) && refusal.code).toBe('RATE_LIMITED');
    expect(isProtoError(refusal) && refusal.headers).toEqual({ 'Retry-After': '1' });
    now = 500;
    limiter.take('p');
    expect(() => limiter.take('p')).toThrow();
    expect(() => limiter.take('q')).not.toThrow();
  });

  it('is off at perSecond 0', () => {
    const limiter = new RateLimiter({ perSecond: 0, burst: 0 });
    expect(limiter.enabled).toBe(false);
    for (let i = 0; i < 1000; i++) limiter.take('p');
  });
});
