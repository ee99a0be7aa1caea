/**
 * The registry and lifecycle capabilities over HTTP (PROTOCOL-NOTES.md, Services): the live list
 * (`GET /services`, `GET /agents`: the same descriptors), one service (`GET /services/{id}`),
 * registration (`POST /services`: 201 created, 200 updated, with the descriptor), removal
 * (`DELETE /services/{id}` → 204), and `POST /services/{id}/pause|resume` → 204. Changes need the
 * `admin` scope (DESIGN.md, Conventions: Scopes).
 */
import type { AccessRules, AccessTarget } from '../../edge/access-rules.ts';
import type { Principal } from '../../edge/credentials.ts';
import { parseRegistration } from '../../registry/registration.ts';
import type { ServiceDescriptor } from '../../registry/service-descriptor.ts';
import type { ServiceRegistry } from '../../registry/service-registry.ts';
import type { RequestContext, Route } from '../route.ts';

/** Per-caller catalogues for the descriptors: a hidden service is not listed, a hidden command or event type not in `accepts`/`produces`. */
export interface ServiceAccess {
  access: AccessRules;
  /** The catalogue entry of a command type (its backend and schema), or undefined. */
  commandOf(type: string): AccessTarget | undefined;
}

/** The routes of the registry and of the lifecycle. */
export function serviceRoutes(registry: ServiceRegistry, access?: ServiceAccess): Route[] {
  const shown = (ctx: RequestContext): ServiceDescriptor[] => registry.list().flatMap((d) => visibleDescriptor(d, ctx.principal, access));
  return [
    { method: 'GET', path: '/services', handle: (ctx) => ({ status: 200, body: { services: shown(ctx) } }) },
    { method: 'GET', path: '/agents', handle: (ctx) => ({ status: 200, body: { agents: shown(ctx) } }) },
    // A hidden service answers 404 before this runs (`serviceAccessGuarded`).
    { method: 'GET', path: '/services/:id', handle: (ctx) => ({ status: 200, body: visibleDescriptor(registry.get(ctx.params.id), ctx.principal, access)[0] }) },
    {
      method: 'POST',
      path: '/services',
      operation: 'services.manage',
      handle: async (ctx) => {
        const { created, descriptor } = await registry.register(parseRegistration(await ctx.json()));
        return { status: created ? 201 : 200, body: descriptor };
      },
    },
    {
      method: 'DELETE',
      path: '/services/:id',
      operation: 'services.manage',
      handle: async (ctx) => {
        await registry.remove(ctx.params.id);
        return { status: 204 };
      },
    },
    {
      method: 'POST',
      path: '/services/:id/pause',
      operation: 'services.manage',
      handle: async (ctx) => {
        await registry.pause(ctx.params.id);
        return { status: 204 };
      },
    },
    {
      method: 'POST',
      path: '/services/:id/resume',
      operation: 'services.manage',
      handle: async (ctx) => {
        await registry.resume(ctx.params.id);
        return { status: 204 };
      },
    },
  ];
}

/**
 * `routes` with the per-caller rule for every path under `/services/{id}`: a service the caller may
 * not see answers 404 `SERVICE_NOT_FOUND` there (its commands, queries, events, manifest part and
 * the pass-through to it), exactly as one that does not exist.
 */
export function serviceAccessGuarded(routes: Route[], access: AccessRules): Route[] {
  if (!access.active) return routes;
  return routes.map((route) => {
    if (!route.path.startsWith('/services/:id')) return route;
    return {
      ...route,
      handle: (ctx: RequestContext) => {
        access.requireBackend(ctx.principal, ctx.params.id);
        return route.handle(ctx);
      },
    };
  });
}

/** The descriptor as `principal` sees it: none for a hidden service, `accepts` and `produces` without hidden commands and event types. */
function visibleDescriptor(descriptor: ServiceDescriptor, principal: Principal, options: ServiceAccess | undefined): ServiceDescriptor[] {
  if (!options?.access.active) return [descriptor];
  if (!options.access.backend(principal, descriptor.id)) return [];
  const accepts = descriptor.accepts.filter((type) => {
    const target = options.commandOf(type);
    return target === undefined || options.access.command(principal, target);
  });
  const produces = descriptor.produces.filter((type) => options.access.event(principal, { backend: descriptor.id, type }));
  return [{ ...descriptor, accepts, produces }];
}
