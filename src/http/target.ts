/**
 * The request target (`req.url`) as the path the router matches and the query: what
 * `URL.parse(target, 'http://gateway.invalid')` gives, without parsing when the target is a plain
 * path that the URL parser would return unchanged (every command's `/commands`). The parser cost
 * about 2 µs per request under commands-e2e (issue 29), more than the routing it serves.
 */

/**
 * A target the URL parser leaves as it is: a path of letters, digits, `-`, `_`, `~` and `/`, not
 * starting with `//` (a scheme-relative reference: `//x` names host `x`). No dot (dot segments are
 * resolved), no `%` (escapes are normalised), no `?` or `#`, no backslash (a slash in http URLs).
 */
const PLAIN_PATH = /^\/(?!\/)[A-Za-z0-9\-_~/]*$/;

/** The path and query of a request target; undefined when it is not a valid URL reference. */
export function requestTarget(target: string): { pathname: string; searchParams: URLSearchParams } | undefined {
  if (PLAIN_PATH.test(target)) return { pathname: target, searchParams: new URLSearchParams() };
  return URL.parse(target, 'http://gateway.invalid') ?? undefined;
}
