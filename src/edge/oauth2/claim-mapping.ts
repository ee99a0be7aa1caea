/**
 * From a verified token's claims to the gateway's caller: the principal is one claim (`sub` by
 * default), the scopes come from another (`scope` by default) through the mapping table of
 * `auth.oauth2.scopeMap`. A claim path is dotted (`realm_access.roles` reaches Keycloak's realm
 * roles); its value is a space-separated string (RFC 8693 §4.2 `scope`) or an array of strings
 * (`scp`, role lists). With no table, the values `read`, `write` and `admin` map to themselves.
 */
import type { OAuth2Config, Scope } from '../../config/types.ts';

const SCOPES: readonly Scope[] = ['read', 'write', 'admin'];

/** The default table: the gateway's own scope names. */
const IDENTITY_MAP: Readonly<Record<string, Scope[]>> = { read: ['read'], write: ['write'], admin: ['admin'] };

/** The principal and scopes of one set of claims. */
export interface MappedClaims {
  /** The principal claim's value, or undefined when the token lacks it (a 401). */
  principal: string | undefined;
  /** The gateway scopes granted. */
  scopes: Set<Scope>;
  /** Every value of the scope claim as the token carried it (for per-caller `access` rules). */
  grants: Set<string>;
}

/** The mapping of one configuration, built once. */
export function claimMapper(config: Pick<OAuth2Config, 'principalClaim' | 'scopeClaim' | 'scopeMap'>): (claims: Record<string, unknown>) => MappedClaims {
  const table = new Map(Object.entries(config.scopeMap ?? IDENTITY_MAP));
  return (claims) => {
    const grants = new Set(claimValues(claimAt(claims, config.scopeClaim)));
    const scopes = new Set<Scope>();
    for (const value of grants) for (const scope of table.get(value) ?? []) if (SCOPES.includes(scope)) scopes.add(scope);
    const principal = claimAt(claims, config.principalClaim);
    return { principal: typeof principal === 'string' && principal !== '' ? principal : undefined, scopes, grants };
  };
}

/** The value at a dotted path (`realm_access.roles`); an exact key with dots wins (`https://acme.com/roles`). */
export function claimAt(claims: Record<string, unknown>, path: string): unknown {
  if (Object.hasOwn(claims, path)) return claims[path];
  let value: unknown = claims;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  return value;
}

/** A claim's values: words of a string, strings of an array; anything else has none. */
export function claimValues(value: unknown): string[] {
  if (typeof value === 'string') return value.split(' ').filter((word) => word !== '');
  if (Array.isArray(value)) return value.filter((entry): entry is string => typeof entry === 'string');
  return [];
}
