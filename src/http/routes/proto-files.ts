/**
 * The `.proto` files of the gRPC surface over HTTP (public, like the manifest that points at them):
 * `GET /proto/gateway.proto` and `GET /proto/cloudevents.proto`, so a client that has only the
 * manifest can generate its stubs. Read once at boot.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ProtoError } from '../../errors.ts';
import type { Route } from '../route.ts';

/** The files served, by name. */
export const PROTO_FILES = ['gateway.proto', 'cloudevents.proto'];

/** The route serving the `.proto` files found in `dir`. */
export function protoFileRoutes(dir: string): Route[] {
  const files = new Map(PROTO_FILES.map((name) => [name, readFileSync(join(dir, name), 'utf8')]));
  return [
    {
      method: 'GET',
      path: '/proto/:file',
      public: true,
      handle: (ctx) => {
        const body = files.get(ctx.params.file);
        if (body === undefined) throw new ProtoError('NOT_FOUND', `no file ${ctx.params.file}; served: ${PROTO_FILES.join(', ')}`);
        return { status: 200, body, contentType: 'text/plain; charset=utf-8' };
      },
    },
  ];
}
