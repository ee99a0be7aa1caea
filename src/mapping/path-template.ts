/**
 * Legacy request paths (`commands[].request.path`, `queries[].request.path`): a template whose
 * placeholder values are encoded as parts of one segment (`URL_PATH`), and a path that cannot leave
 * what the configuration wrote. A value that makes a segment empty, `.` or `..` (or their encoded
 * forms `%2e`, `.%2e`, ...) would be normalised away by a URL parser or a backend
 * (`/tenants/{data.tenant}/orders/{data.orderId}/cancel` with `..` values climbs to `/cancel`), so
 * such a path is refused before any call is made.
 */
import { MappingError, URL_PATH, type CompiledTemplate } from './jsonata.ts';

/** A segment a URL parser resolves as a dot segment (WHATWG URL, "single-dot" and "double-dot" path segments). */
const DOT_SEGMENT = /^(?:\.|%2e){1,2}$/i;

/** A rendered path that would leave its template: a placeholder gave an empty or dot segment. */
export class UnsafePathError extends MappingError {}

/** Renders a path template; throws `MappingError` when a placeholder yields nothing, `UnsafePathError` for an unsafe segment. */
export async function renderPath(template: CompiledTemplate, input: unknown): Promise<string> {
  const path = await template.render(input, URL_PATH);
  const problem = unsafeSegment(path, template.source);
  if (problem) throw new UnsafePathError(`${problem} in path template "${template.source}"`);
  return path;
}

/** What is wrong with `path` (rendered from `source`), or undefined when every segment is safe. */
function unsafeSegment(path: string, source: string): string | undefined {
  const pathOnly = (text: string): string[] => text.split(/[?#]/, 1)[0]!.split('/');
  const segments = pathOnly(path);
  // Empty segments the configuration wrote itself (a leading `/`, a trailing `/`, `//`) stay allowed.
  const writtenEmpty = pathOnly(source).filter((segment) => segment === '').length;
  for (const segment of segments) {
    // Decoded once too: a backend that decodes its path before resolving it must not see `..` either.
    if (DOT_SEGMENT.test(segment) || DOT_SEGMENT.test(decodedOnce(segment))) return `a placeholder gives the dot segment "${segment}"`;
  }
  if (segments.filter((segment) => segment === '').length > writtenEmpty) return 'a placeholder gives an empty segment';
  return undefined;
}

function decodedOnce(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
