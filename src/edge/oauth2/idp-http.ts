/**
 * The gateway's own requests to the identity provider (discovery, JWKS, introspection), bounded in
 * time and size. The provider is configured by the operator, so no SSRF guard applies; its answers
 * are still untrusted input (size, shape). A failure is thrown as an `IdpUnavailable` naming the
 * endpoint's path, never a token.
 */
import { request } from 'undici';

/** Deadline of one request to the provider, in milliseconds. */
export const IDP_TIMEOUT_MS = 5_000;

/** Largest answer read from the provider (a JWKS of a few dozen keys is ~10 KiB). */
export const IDP_MAX_BODY_BYTES = 1024 * 1024;

/** The provider did not answer usefully (unreachable, non-2xx, too large, not JSON). */
export class IdpUnavailable extends Error {
  /** `where`: the URL asked (only its path is kept) or a name (`JWKS`). */
  constructor(where: string, reason: string) {
    super(`${URL.canParse(where) ? new URL(where).pathname : where}: ${reason}`);
    this.name = 'IdpUnavailable';
  }
}

/** GETs a JSON object from the provider. */
export function getIdpJson(url: string): Promise<Record<string, unknown>> {
  return exchange(url, { method: 'GET', headers: { accept: 'application/json' } });
}

/** POSTs an `application/x-www-form-urlencoded` body (RFC 7662 §2.1) and reads a JSON object. */
export function postIdpForm(url: string, form: Record<string, string>, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  const body = new URLSearchParams(form).toString();
  return exchange(url, { method: 'POST', body, headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', ...headers } });
}

async function exchange(url: string, init: { method: 'GET' | 'POST'; body?: string; headers: Record<string, string> }): Promise<Record<string, unknown>> {
  let text: string;
  try {
    const response = await request(url, { ...init, signal: AbortSignal.timeout(IDP_TIMEOUT_MS) });
    if (response.statusCode < 200 || response.statusCode > 299) {
      await response.body.dump().catch(() => undefined);
      throw new IdpUnavailable(url, `answered ${response.statusCode}`);
    }
    text = await readBounded(response.body, url);
  } catch (err) {
    if (err instanceof IdpUnavailable) throw err;
    throw new IdpUnavailable(url, (err as { code?: string })?.code ?? (err as Error)?.name ?? 'request failed');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new IdpUnavailable(url, 'the answer is not JSON');
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new IdpUnavailable(url, 'the answer is not a JSON object');
  return parsed as Record<string, unknown>;
}

async function readBounded(body: AsyncIterable<Buffer>, url: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > IDP_MAX_BODY_BYTES) throw new IdpUnavailable(url, `answer larger than ${IDP_MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
