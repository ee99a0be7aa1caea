/**
 * A real OpenID provider on loopback for the identity tests: `oidc-provider` (the certified Node
 * implementation) with the client-credentials grant, JWT access tokens for one resource, RFC 7662
 * introspection, and discovery at `{issuer}/.well-known/openid-configuration`.
 *
 * The provider sits behind a small front server so a test can rotate its signing key (the next
 * provider instance signs with a new key and publishes both), take its JWKS endpoint down, and
 * count how often the gateway read the JWKS.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import Provider from 'oidc-provider';

/** A client of the provider: id, secret, the scopes it may ask for, and realm roles put in its tokens (Keycloak's `realm_access.roles`). */
export interface TestClient {
  id: string;
  secret: string;
  scope: string;
  roles?: string[];
}

/** What a test can do with the provider. */
export interface TestIdp {
  issuer: string;
  jwksUrl: string;
  tokenUrl: string;
  /** The private signing keys, newest first (tests sign crafted tokens with them). */
  keys: JWK[];
  /** How many times the JWKS was read. */
  jwksReads(): number;
  /** The JWKS endpoint answers 503 while down. */
  setJwksDown(down: boolean): void;
  /** Signs new tokens with a new key (published first; the old ones stay published unless `dropOld`). */
  rotate(options?: { dropOld?: boolean }): Promise<JWK>;
  /** A client-credentials access token (a JWT) for `client`, asking for `scope`. */
  token(client: TestClient, scope?: string, resource?: string): Promise<string>;
  /** An opaque access token (introspection only). */
  opaqueToken(client: TestClient, scope?: string): Promise<string>;
  close(): Promise<void>;
}

/** The resource (RFC 8707) whose tokens are JWTs with this audience. */
export const RESOURCE = 'https://gateway.test/';
/** The opaque-token resource. */
export const OPAQUE_RESOURCE = 'https://opaque.test/';

/** Starts the provider with `clients` (plus one for the gateway's introspection: `gateway`/`gateway-secret`). */
export async function startTestIdp(clients: TestClient[], options: { accessTokenTtl?: number } = {}): Promise<TestIdp> {
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const keys: JWK[] = [await newKey()];
  let reads = 0;
  let jwksDown = false;
  let provider = makeProvider(issuer, keys, clients, options.accessTokenTtl ?? 300);
  server.on('request', (req, res) => {
    if (req.url?.startsWith('/jwks')) {
      reads += 1;
      if (jwksDown) {
        res.writeHead(503).end();
        return;
      }
    }
    provider.callback()(req, res);
  });
  const requestToken = async (client: TestClient, scope: string, resource: string) => {
    const res = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${client.id}:${client.secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }).toString(),
    });
    const body = (await res.json()) as { access_token?: string; error?: string; error_description?: string };
    if (!body.access_token) throw new Error(`token request refused: ${body.error} ${body.error_description}`);
    return body.access_token;
  };
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    tokenUrl: `${issuer}/token`,
    keys,
    jwksReads: () => reads,
    setJwksDown: (down) => {
      jwksDown = down;
    },
    rotate: async ({ dropOld = false } = {}) => {
      const key = await newKey();
      if (dropOld) keys.splice(0, keys.length);
      keys.unshift(key);
      provider = makeProvider(issuer, keys, clients, options.accessTokenTtl ?? 300);
      return key;
    },
    token: (client, scope = client.scope, resource = RESOURCE) => requestToken(client, scope, resource),
    opaqueToken: (client, scope = client.scope) => requestToken(client, scope, OPAQUE_RESOURCE),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

async function newKey(): Promise<JWK> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const jwk = await exportJWK(privateKey);
  return { ...jwk, kid: `k-${Math.random().toString(36).slice(2, 10)}`, alg: 'RS256', use: 'sig' };
}

function makeProvider(issuer: string, keys: JWK[], clients: TestClient[], ttl: number): Provider {
  const all: TestClient[] = [...clients, { id: 'gateway', secret: 'gateway-secret', scope: '' }];
  const scopes = [...new Set(all.flatMap((c) => c.scope.split(' ')).filter(Boolean))];
  const provider = new Provider(issuer, {
    clients: all.map((c) => ({
      client_id: c.id,
      client_secret: c.secret,
      grant_types: ['client_credentials'],
      redirect_uris: [],
      response_types: [],
      ...(c.scope && { scope: c.scope }),
    })),
    ttl: { ClientCredentials: ttl },
    // A nested claim, as Keycloak issues realm roles.
    extraTokenClaims: (_ctx: unknown, token: { clientId?: string }) => {
      const roles = all.find((c) => c.id === token.clientId)?.roles;
      return roles ? { realm_access: { roles } } : undefined;
    },
    jwks: { keys: keys as never },
    scopes,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        // Every resource but OPAQUE_RESOURCE (the gateway's own URL too, as an MCP client asks
        // for it, RFC 8707) gets JWTs for the audience proto-gateway.
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: scopes.join(' '),
          audience: resource === OPAQUE_RESOURCE ? 'opaque-gateway' : 'proto-gateway',
          accessTokenTTL: ttl,
          accessTokenFormat: resource === OPAQUE_RESOURCE ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  } as never);
  return provider;
}
