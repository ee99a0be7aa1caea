/**
 * Discovery: `GET /.well-known/proto` (and `.json`), always public and always 200
 * (PROTOCOL-NOTES.md), and `GET /services/{id}/.well-known/proto`, one backend's part.
 */
import { ProtoError } from '../../errors.ts';
import type { PublicManifest } from '../../manifest/public-manifest.ts';
import type { Route } from '../route.ts';

/** The discovery routes. */
export function discoveryRoutes(manifest: PublicManifest): Route[] {
  const root = () => ({ status: 200, body: manifest.current() });
  return [
    { method: 'GET', path: '/.well-known/proto', public: true, handle: root },
    { method: 'GET', path: '/.well-known/proto.json', public: true, handle: root },
    {
      method: 'GET',
      path: '/services/:id/.well-known/proto',
      public: true,
      handle: (ctx) => {
        const scoped = manifest.forBackend(ctx.params.id);
        if (!scoped) throw new ProtoError('SERVICE_NOT_FOUND', `no service "${ctx.params.id}"`);
        return { status: 200, body: scoped };
      },
    },
  ];
}
