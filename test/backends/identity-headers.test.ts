/**
 * `forwardIdentity` header values: a principal id comes from a token claim and may hold any
 * character, so it can never split a header or inject one.
 */
import { describe, expect, it } from 'vitest';
import { identityHeaders } from '../../src/backends/identity-headers.ts';

describe('identity headers', () => {
  it('percent-encodes a principal with CR/LF, spaces or non-ASCII; plain ids stay as they are', () => {
    expect(identityHeaders('header', { principal: 'svc-1', scopes: ['read'] })).toEqual({ 'x-proto-principal': 'svc-1', 'x-proto-scopes': 'read' });
    const hostile = identityHeaders('header', { principal: 'eve\r\nX-Proto-Scopes: admin', scopes: [] });
    expect(hostile['x-proto-principal']).toBe('eve%0D%0AX-Proto-Scopes%3A%20admin');
    expect(hostile['x-proto-scopes']).toBeUndefined();
    expect(identityHeaders('header', { principal: 'zoë' })['x-proto-principal']).toBe('zo%C3%AB');
  });

  it('none adds nothing; token without a token falls back to the principal', () => {
    expect(identityHeaders('none', { principal: 'a', token: 't' })).toEqual({});
    expect(identityHeaders('token', { principal: 'a', token: 't' })).toEqual({ authorization: 'Bearer t' });
    expect(identityHeaders('token', { principal: 'a' })).toEqual({ 'x-proto-principal': 'a' });
  });
});
