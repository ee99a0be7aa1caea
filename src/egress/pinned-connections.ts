/**
 * Connections to the services registered at runtime (`POST /services` with an endpoint), pinned by
 * the registry's SSRF guard: every new socket resolves its host through the guard's `lookup`
 * (`registry.allowNetworks`), so a host that passed the check at registration but is re-pointed at
 * another address later (DNS rebinding) is refused before any connection is made. The same guard
 * code as webhook deliveries. Configured backends use the default connections.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent, type Dispatcher } from 'undici';
import type { SsrfGuard } from './ssrf-guard.ts';

/** One pool per client library: undici (manifest, catalogues, commands, queries, events) and node:http (pass-through). */
export interface BackendConnections {
  dispatcher: Dispatcher;
  httpAgent: HttpAgent;
  /** Closes both pools. Safe to call twice. */
  close(): Promise<void>;
}

/** Connection pools whose sockets connect only to addresses `guard` allows at connect time. */
export function pinnedConnections(guard: Pick<SsrfGuard, 'lookup'>): BackendConnections {
  const dispatcher = new Agent({ connect: { lookup: guard.lookup } });
  const httpAgent = new HttpAgent({ keepAlive: true, lookup: guard.lookup } as ConstructorParameters<typeof HttpAgent>[0]);
  let closed: Promise<void> | undefined;
  return {
    dispatcher,
    httpAgent,
    close() {
      closed ??= dispatcher.close().then(() => httpAgent.destroy());
      return closed;
    },
  };
}
