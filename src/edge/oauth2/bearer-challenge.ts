/**
 * `WWW-Authenticate: Bearer …` challenges (RFC 6750 §3): a refused token says why
 * (`error="invalid_token", error_description="the token has expired"`), a missing scope which
 * (`error="insufficient_scope", scope="write"`), and every challenge points at the protected-resource
 * metadata (RFC 9728 §5.1 `resource_metadata`), so a client such as an MCP client finds the
 * authorization server by itself.
 */

/** The parts of one challenge; absent parts are left out. */
export interface BearerChallenge {
  /** RFC 6750 §3.1 error code. */
  error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope';
  /** Human-readable cause (quoted; characters RFC 6750 does not allow are dropped). */
  description?: string;
  /** Space-separated scopes needed (insufficient_scope). */
  scope?: string;
  /** URL of the RFC 9728 protected-resource metadata. */
  resourceMetadata?: string;
}

/** The header value of `challenge`. */
export function bearerChallenge(challenge: BearerChallenge): string {
  const params: string[] = [];
  if (challenge.resourceMetadata) params.push(`resource_metadata="${quotable(challenge.resourceMetadata)}"`);
  if (challenge.error) params.push(`error="${challenge.error}"`);
  if (challenge.description) params.push(`error_description="${quotable(challenge.description)}"`);
  if (challenge.scope) params.push(`scope="${quotable(challenge.scope)}"`);
  return params.length === 0 ? 'Bearer' : `Bearer ${params.join(', ')}`;
}

/** RFC 6750 §3: error_description and scope use %x20-21 / %x23-5B / %x5D-7E only (no `"` or `\`). */
function quotable(text: string): string {
  return text.replace(/[^\x20\x21\x23-\x5b\x5d-\x7e]/g, '').slice(0, 200);
}
