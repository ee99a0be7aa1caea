/**
 * OAuth 2.0 Protected Resource Metadata (RFC 9728) of the gateway, with `auth.type: oauth2`:
 * `GET /.well-known/oauth-protected-resource` describes the gateway as a resource (its URL, the
 * authorization server that issues its tokens, the scopes, how a token is presented), and
 * `GET /.well-known/oauth-protected-resource/mcp` the MCP endpoint (§3.1: the resource's path
 * after the well-known name), which MCP clients look up first. Every 401 points at the first
 * through `WWW-Authenticate: Bearer resource_metadata="…"` (§5.1), so a client that knows only the
 * gateway's URL finds where to get a token by itself. Public, like the manifest.
 */
import type { AuthConfig } from '../../config/types.ts';
import { oauth2Scopes } from '../../manifest/aggregate.ts';
import type { Route } from '../route.ts';

/** The metadata document of `resource` (RFC 9728 §2). */
export function protectedResourceMetadata(auth: AuthConfig, resource: string): Record<string, unknown> {
  const oauth2 = auth.oauth2;
  return {
    resource,
    ...(oauth2?.issuer && { authorization_servers: [oauth2.issuer] }),
    ...(oauth2?.jwksUrl && { jwks_uri: oauth2.jwksUrl }),
    scopes_supported: oauth2Scopes(auth),
    // RFC 6750 §2.1 header always; §2.3 query only where the operator allowed it (EventSource).
    bearer_methods_supported: oauth2?.queryParam ? ['header', 'query'] : ['header'],
    resource_name: 'proto-gateway',
  };
}

/** The metadata routes (none unless `auth.type` is `oauth2`). */
export function protectedResourceRoutes(auth: AuthConfig, publicUrl: string, current: () => AuthConfig = () => auth): Route[] {
  if (auth.type !== 'oauth2') return [];
  // Built from the current configuration generation (`current`): a reload may change `auth.oauth2`.
  return [
    { method: 'GET', path: '/.well-known/oauth-protected-resource', public: true, handle: () => ({ status: 200, body: protectedResourceMetadata(current(), publicUrl) }) },
    { method: 'GET', path: '/.well-known/oauth-protected-resource/mcp', public: true, handle: () => ({ status: 200, body: protectedResourceMetadata(current(), `${publicUrl}mcp`) }) },
  ];
}
