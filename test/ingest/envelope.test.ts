import { describe, expect, it } from 'vitest';
import { checkEventEnvelope } from '../../src/ingest/envelope.ts';

const valid = {
  specversion: '1.0',
  id: '0b7c1c7e-6d7c-4f63-9b37-1d7a8f1f2a10',
  source: 'https://payments.example.com/',
  type: 'PaymentCapturedV1',
  datacontenttype: 'application/json',
  dataschema: 'https://payments.example.com/events/payment-captured/1',
  correlationid: 'c-1',
  time: '2024-05-01T10:00:00.123Z',
  data: { amount: 10 },
};

describe('checkEventEnvelope', () => {
  it('accepts a complete envelope and keeps extension attributes', () => {
    const result = checkEventEnvelope({ ...valid, traceparent: '00-abc-def-01' });
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.event.traceparent).toBe('00-abc-def-01');
  });

  it('accepts an untyped event without dataschema or correlationid', () => {
    const { dataschema: _d, correlationid: _c, ...untyped } = valid;
    expect(checkEventEnvelope(untyped).ok).toBe(true);
  });

  it.each(['2024-05-01T10:00:00Z', '2024-05-01T10:00:00+02:00', '2024-05-01T10:00:00.5-0500', '2024-05-01 10:00Z'])(
    'accepts the RFC 3339 time %s',
    (time) => expect(checkEventEnvelope({ ...valid, time }).ok).toBe(true),
  );

  it.each([
    ['not an object', null, 'not a JSON object'],
    ['an array', [valid], 'not a JSON object'],
    ['specversion 0.3', { ...valid, specversion: '0.3' }, 'specversion'],
    ['an empty id', { ...valid, id: '' }, 'id'],
    ['a numeric id', { ...valid, id: 7 }, 'id'],
    ['no source', { ...valid, source: undefined }, 'source'],
    ['a kebab-case type', { ...valid, type: 'payment-captured' }, 'PascalCase'],
    ['a camelCase type', { ...valid, type: 'paymentCaptured' }, 'PascalCase'],
    ['another content type', { ...valid, datacontenttype: 'text/plain' }, 'datacontenttype'],
    ['a relative dataschema', { ...valid, dataschema: 'payment-captured/1' }, 'dataschema'],
    ['a numeric correlationid', { ...valid, correlationid: 5 }, 'correlationid'],
    ['a time without zone', { ...valid, time: '2024-05-01T10:00:00' }, 'time'],
    ['a time that is no date', { ...valid, time: 'yesterday' }, 'time'],
    ['an impossible time', { ...valid, time: '2024-13-45T10:00:00Z' }, 'time'],
    ['array data', { ...valid, data: [1] }, 'data'],
    ['null data', { ...valid, data: null }, 'data'],
    ['no data', { ...valid, data: undefined }, 'data'],
  ])('rejects %s', (_name, value, reason) => {
    const result = checkEventEnvelope(value);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toContain(reason);
  });
});
