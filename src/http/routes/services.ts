/**
 * The registry and lifecycle capabilities over HTTP (PROTOCOL-NOTES.md, Services): the live list
 * (`GET /services`, `GET /agents`: the same descriptors), one service (`GET /services/{id}`),
 * registration (`POST /services`: 201 created, 200 updated, with the descriptor), removal
 * (`DELETE /services/{id}` → 204), and `POST /services/{id}/pause|resume` → 204. Changes need the
 * `admin` scope (DESIGN.md, Conventions: Scopes).
 */
import { parseRegistration } from '../../registry/registration.ts';
import type { ServiceRegistry } from '../../registry/service-registry.ts';
import type { Route } from '../route.ts';

/** The routes of the registry and of the lifecycle. */
export function serviceRoutes(registry: ServiceRegistry): Route[] {
  return [
    { method: 'GET', path: '/services', handle: () => ({ status: 200, body: { services: registry.list() } }) },
    { method: 'GET', path: '/agents', handle: () => ({ status: 200, body: { agents: registry.list() } }) },
    { method: 'GET', path: '/services/:id', handle: (ctx) => ({ status: 200, body: registry.get(ctx.params.id) }) },
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
