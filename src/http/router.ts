/**
 * Route table over find-my-way: one entry per path pattern holding its methods, so an unknown path
 * is a 404 and a known path with another method is a 405 with `Allow` (DESIGN.md, order of checks).
 */
import FindMyWay from 'find-my-way';
import { ProtoError } from '../errors.ts';
import type { Method, Route } from './route.ts';

const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** Routes registered under one pattern, by method. */
type PathEntry = Map<Method, Route>;

export interface Match {
  route: Route;
  params: Record<string, string>;
}

export class Router {
  readonly #tree = FindMyWay({ ignoreTrailingSlash: false, ignoreDuplicateSlashes: false, maxParamLength: 200 });
  readonly #paths = new Map<string, PathEntry>();

  /** Adds routes; a second route for the same method and pattern is a programming error. */
  add(routes: Iterable<Route>): this {
    for (const route of routes) this.#add(route);
    return this;
  }

  #add(route: Route): void {
    let entry = this.#paths.get(route.path);
    if (!entry) {
      entry = new Map();
      this.#paths.set(route.path, entry);
      this.#tree.on([...ALL_METHODS], route.path, () => undefined, entry);
    }
    if (entry.has(route.method)) throw new Error(`duplicate route ${route.method} ${route.path}`);
    entry.set(route.method, route);
  }

  /** The methods a pattern answers (for `Allow`). */
  allowed(entry: PathEntry): string[] {
    return [...entry.keys()];
  }

  /**
   * Finds the route for a request; throws 404 `NOT_FOUND` or 405 `METHOD_NOT_ALLOWED`.
   * HEAD is answered by the GET route. OPTIONS returns `undefined` route with the allowed methods.
   */
  match(method: string, path: string): Match | { options: string[] } {
    const found = this.#tree.find('GET', path);
    if (!found) throw new ProtoError('NOT_FOUND', `no resource at ${path}`);
    const entry = found.store as PathEntry;
    const params = found.params as Record<string, string>;
    if (method === 'OPTIONS') return { options: this.allowed(entry) };
    const route = entry.get((method === 'HEAD' ? 'GET' : method) as Method);
    if (!route) {
      const allow = this.allowed(entry).join(', ');
      throw new ProtoError('METHOD_NOT_ALLOWED', `${method} is not allowed on ${path}`, { allow }, { Allow: allow });
    }
    return { route, params };
  }
}
