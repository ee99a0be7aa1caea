/**
 * Rewriting backend addresses to their public form (DESIGN.md, Conventions: "Events of proto
 * backends", and the manifest rule "no backend address may appear anywhere"). A URL under one of
 * the backend's addresses becomes the same path under `{publicUrl}services/{id}/`.
 */

/** Rewrites every backend address inside a string; strings without one come back unchanged. */
export type UrlRewriter = (text: string) => string;

/**
 * Builds a rewriter from the backend's addresses (its endpoint, its configured url) to `publicBase`
 * (which ends in `/`). Longer prefixes win, so `http://b/api/x` under endpoint `http://b/api/`
 * becomes `{publicBase}x`; anything else on the backend's origin keeps its path under `publicBase`.
 */
export function createUrlRewriter(addresses: string[], publicBase: string): UrlRewriter {
  const prefixes = new Set<string>();
  for (const address of addresses) {
    const url = new URL(address);
    prefixes.add(withSlash(url.href));
    prefixes.add(`${url.origin}/`);
  }
  const ordered = [...prefixes].sort((a, b) => b.length - a.length);
  const origins = [...new Set(ordered.map((p) => new URL(p).origin))];
  return (text) => {
    if (!origins.some((origin) => text.includes(origin))) return text;
    let out = text;
    for (const prefix of ordered) out = out.split(prefix).join(publicBase);
    // A bare origin without a trailing slash (e.g. "http://127.0.0.1:3002" at the end of a string).
    for (const origin of origins) out = out.split(origin).join(publicBase.slice(0, -1));
    return out;
  };
}

/** Applies a rewriter to every string inside a JSON value (keys untouched); returns a new value. */
export function rewriteDeep<T>(value: T, rewrite: UrlRewriter): T {
  if (typeof value === 'string') return rewrite(value) as T;
  if (Array.isArray(value)) return value.map((item) => rewriteDeep(item, rewrite)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = rewriteDeep(item, rewrite);
    return out as T;
  }
  return value;
}

/** `url` with exactly one trailing `/`. */
export function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}

/** Joins an endpoint and a path with exactly one `/` (DESIGN.md, Conventions: Backend URLs). */
export function joinUrl(endpoint: string, path: string): string {
  return `${endpoint.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}
