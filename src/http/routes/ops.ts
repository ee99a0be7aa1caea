/**
 * Operations endpoints: `/healthz` (200 while the process lives, shutdown included), `/readyz`
 * (200 once listening and every component is ready; 503 `NOT_READY` while starting and from the
 * moment shutdown begins) and `/metrics` (Prometheus text; needs
 * `read` unless `metrics.public`).
 */
import type { Registry } from 'prom-client';
import { ProtoError } from '../../errors.ts';
import type { Route } from '../route.ts';

export interface OpsOptions {
  registry: Registry;
  metricsPublic: boolean;
  /** The names of components not ready yet (empty = ready). */
  notReady(): string[];
}

/** The operations routes. */
export function opsRoutes(options: OpsOptions): Route[] {
  return [
    { method: 'GET', path: '/healthz', public: true, duringShutdown: true, handle: () => ({ status: 200, body: { status: 'ok' } }) },
    {
      method: 'GET',
      path: '/readyz',
      public: true,
      duringShutdown: true,
      handle: () => {
        const pending = options.notReady();
        if (pending.length > 0) throw new ProtoError('NOT_READY', 'the gateway is not ready', { pending }, { 'Retry-After': '1' });
        return { status: 200, body: { status: 'ready' } };
      },
    },
    {
      method: 'GET',
      path: '/metrics',
      public: options.metricsPublic,
      handle: async () => ({ status: 200, body: await options.registry.metrics(), contentType: options.registry.contentType }),
    },
  ];
}
