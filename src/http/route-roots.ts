/**
 * The first path segments of the gateway's own routes. `console.path` must not start with one of
 * them (the console's routes would collide with or shadow the gateway's); the config check refuses
 * it, and a test keeps this list equal to what a gateway with every part enabled registers.
 */
export const GATEWAY_ROUTE_ROOTS: ReadonlySet<string> = new Set([
  '.well-known', 'a2a', 'agents', 'commands', 'events', 'healthz', 'mcp', 'metrics', 'proto', 'queries', 'readyz', 'schemas',
  'services', 'spec', 'status', 'subscriptions',
]);
