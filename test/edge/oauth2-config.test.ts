/**
 * `auth.oauth2` in the configuration: defaults, and the refusals a JSON Schema cannot express
 * (no `alg: none`, HMAC only with a shared secret, a way to find keys, introspection credentials).
 */
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/problems.ts';
import { parseConfig } from '../../src/gateway-config.ts';

async function problems(auth: string): Promise<string[]> {
  const error = await parseConfig(`auth:\n${auth}`, '/tmp/gateway.yaml', {}).then(() => undefined, (err: unknown) => err);
  expect(error).toBeInstanceOf(ConfigError);
  return (error as ConfigError).problems.map((p) => p.message);
}

describe('auth.oauth2 configuration', () => {
  it('applies the defaults: asymmetric algorithms, 30s leeway, sub and scope claims, no table', async () => {
    const config = await parseConfig('auth:\n  type: oauth2\n  oauth2: { issuer: "https://idp.example.com/realms/acme", audience: gw }\n', '/tmp/gateway.yaml', {});
    expect(config.auth.oauth2).toMatchObject({
      issuer: 'https://idp.example.com/realms/acme',
      audience: ['gw'],
      clockToleranceMs: 30_000,
      jwksCacheMaxAgeMs: 600_000,
      jwksCooldownMs: 30_000,
      principalClaim: 'sub',
      scopeClaim: 'scope',
    });
    expect(config.auth.oauth2!.algorithms).not.toContain('HS256');
    expect(config.auth.oauth2!.algorithms).toContain('RS256');
    expect(config.auth.oauth2!.scopeMap).toBeUndefined();
  });

  it('HMAC algorithms are accepted by default only with a shared secret', async () => {
    const config = await parseConfig('auth:\n  type: oauth2\n  oauth2: { jwksUrl: "https://idp.example.com/jwks", sharedSecret: s3cret }\n', '/tmp/gateway.yaml', {});
    expect(config.auth.oauth2!.algorithms).toContain('HS256');
  });

  it('refuses alg none, HS256 without a secret, no way to find keys, introspection without a client, an unknown scope', async () => {
    expect(await problems('  type: oauth2\n  oauth2: { issuer: "https://idp.example.com", algorithms: [none] }\n')).toEqual(
      expect.arrayContaining([expect.stringContaining('auth.oauth2.algorithms[0]')]),
    );
    expect(await problems('  type: oauth2\n  oauth2: { issuer: "https://idp.example.com", algorithms: [HS256] }\n')).toEqual([
      'auth.oauth2.algorithms[0]: HS256 needs auth.oauth2.sharedSecret',
    ]);
    expect(await problems('  type: oauth2\n  oauth2: { audience: gw }\n')).toEqual(['auth.oauth2: needs issuer (OIDC discovery), jwksUrl or introspectionUrl']);
    expect(await problems('  type: oauth2\n')).toEqual(['auth.type: auth type oauth2 needs auth.oauth2 (issuer or jwksUrl)']);
    expect(await problems('  type: oauth2\n  oauth2: { introspectionUrl: "https://idp.example.com/introspect" }\n')).toEqual([
      'auth.oauth2.clientId: introspectionUrl needs clientId (and clientSecret): the gateway authenticates to the endpoint',
    ]);
    expect((await problems('  type: oauth2\n  oauth2: { issuer: "https://idp.example.com", scopeMap: { admins: [root] } }\n')).join()).toContain('admins');
    expect(await problems('  type: apiKey\n  keys: [{ id: a, key: k, scopes: [read] }]\n  oauth2: { issuer: "https://idp.example.com" }\n')).toEqual([
      'auth.oauth2: auth.oauth2 is read only when auth.type is oauth2',
    ]);
  });
});
