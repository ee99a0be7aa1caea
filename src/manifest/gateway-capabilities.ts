/**
 * The capabilities the gateway implements so far, each with exactly the routes that exist
 * (never `active` with a missing route). Later features add theirs here.
 */
import { oauth2Scopes } from './aggregate.ts';
import type { AuthConfig, GatewayConfig } from '../config/types.ts';
import { isWildcardAddress } from '../config/wildcard-address.ts';
import type { CapabilitySpec } from './capabilities.ts';
import type { ServiceEntry } from './types.ts';

/** The events capability: the one log, its catalogue and schemas. */
export const EVENTS_CAPABILITY: CapabilitySpec = {
  name: 'io.proto.agents.events',
  version: '1.0.0',
  description: 'One CloudEvents log of every backend: history with filters and cursors, the event-type catalogue and schemas.',
  schemaName: 'event-list',
  endpoints: [
    { method: 'GET', path: '/events', description: 'Historical query: type, correlationId, source, from, to, limit, after' },
    { method: 'GET', path: '/events/catalogue', description: 'Event-type catalogue' },
    { method: 'GET', path: '/events/stream', description: 'Live SSE stream: type, correlationId, source; replay after Last-Event-ID' },
    { method: 'GET', path: '/events/{schema}/{version}', description: 'JSON Schema of a typed event' },
    { method: 'POST', path: '/subscriptions', description: 'Register a webhook: webhook.url, webhook.secret, filter.types, serviceId' },
    { method: 'GET', path: '/subscriptions', description: "The caller's webhook subscriptions" },
    { method: 'GET', path: '/subscriptions/{id}', description: 'One webhook subscription' },
    { method: 'DELETE', path: '/subscriptions/{id}', description: 'Remove a webhook subscription and its pending deliveries' },
    { method: 'GET', path: '/subscriptions/{id}/deliveries', description: 'Deliveries of a subscription: status (pending, in-flight, succeeded, dead), limit, after' },
    { method: 'POST', path: '/subscriptions/{id}/deliveries/{deliveryId}/retry', description: 'Retry a dead or succeeded delivery now, with a fresh retry schedule; 202 with the delivery' },
  ],
  // Only channels that are served, never `false`: absence means "not supported" (PROTOCOL.md 2.3), and the
  // published discovery schema allows only sse, webhook and mcp here (A2A is announced by its service block).
  push: { sse: true, webhook: true },
};

/** The commands capability: the aggregated command catalogue, its schemas and the one write path. */
export const COMMANDS_CAPABILITY: CapabilitySpec = {
  name: 'io.proto.agents.commands',
  version: '1.0.0',
  description: 'One command catalogue over every backend; commands validated by the gateway, stored durably, delivered to the backend that accepts their type.',
  schemaName: 'envelope',
  endpoints: [
    { method: 'GET', path: '/commands', description: 'Command catalogue' },
    { method: 'GET', path: '/commands/{schema}/{version}', description: 'JSON Schema of a command\'s data (application/schema+json)' },
    { method: 'POST', path: '/commands', description: 'Submit a command (CloudEvents envelope with dataschema); 201 { id }, the correlation id of its result events' },
  ],
};

/** The queries capability: the aggregated query catalogue, its documents and synchronous execution. */
export const QUERIES_CAPABILITY: CapabilitySpec = {
  name: 'io.proto.agents.queries',
  version: '1.0.0',
  description: 'One query catalogue over every backend; parameters checked by the gateway, the query run synchronously by the backend that declares it.',
  schemaName: 'catalogue-entry',
  endpoints: [
    { method: 'GET', path: '/queries', description: 'Query catalogue' },
    { method: 'GET', path: '/queries/{schema}/{version}', description: 'A query: { description?, parameters? (JSON Schema of the query string), response }' },
    { method: 'GET', path: '/queries/{schema}', description: 'Run a query with its parameters in the query string; 200 with the result' },
  ],
};

/** The registry capability: the live list of services and runtime registration. */
export const REGISTRY_CAPABILITY: CapabilitySpec = {
  name: 'io.proto.agents.registry',
  version: '1.0.0',
  description: 'The services behind the gateway as descriptors (accepts, produces, status); services registered and removed at runtime.',
  schemaName: 'service-descriptor',
  endpoints: [
    { method: 'GET', path: '/services', description: 'Every service: { services: [descriptor] }' },
    { method: 'GET', path: '/services/{id}', description: 'One service descriptor' },
    { method: 'GET', path: '/agents', description: 'The live list of agents: { agents: [descriptor] }' },
    { method: 'POST', path: '/services', description: 'Register or update a service (admin): descriptor fields without status; 201 or 200' },
    { method: 'DELETE', path: '/services/{id}', description: 'Remove a registered service and its subscriptions (admin); 204' },
  ],
};

/** The lifecycle capability: pausing and resuming a backend. */
export const LIFECYCLE_CAPABILITY: CapabilitySpec = {
  name: 'io.proto.agents.lifecycle',
  version: '1.0.0',
  description: 'Pause a backend (its commands wait in the outbox, its events are not read) and resume it.',
  schemaName: 'service-descriptor',
  extends: 'io.proto.agents.registry',
  endpoints: [
    { method: 'POST', path: '/services/{id}/pause', description: 'Pause a service (admin); 204' },
    { method: 'POST', path: '/services/{id}/resume', description: 'Resume a service; held commands are delivered (admin); 204' },
  ],
};

/** The gateway's capability specs for a configuration. */
export function gatewayCapabilitySpecs(config: GatewayConfig): CapabilitySpec[] {
  // The MCP front pushes a command's events to the session that sent it (PROTOCOL.md 6.2).
  const events = config.mcp.enabled ? { ...EVENTS_CAPABILITY, push: { ...EVENTS_CAPABILITY.push, mcp: true } } : EVENTS_CAPABILITY;
  return [events, COMMANDS_CAPABILITY, QUERIES_CAPABILITY, REGISTRY_CAPABILITY, LIFECYCLE_CAPABILITY];
}

/**
 * The gateway's transports besides HTTP, as its service entry advertises them (PROTOCOL.md 2.4):
 * `grpc` when the `grpc` section is present (`publicEndpoint`, default `host:port`, the public URL's
 * host when `grpc.host` is a wildcard address, and the served
 * `.proto`), and `a2a` (the agent card URL) when `a2a.enabled`; `grpcPort` is the port bound when the configured one is 0.
 */
export function gatewayTransports(config: GatewayConfig, publicUrl: string, grpcPort?: number, tokenUrl?: string): Pick<ServiceEntry, 'grpc' | 'a2a' | 'mcp'> {
  const transports: Pick<ServiceEntry, 'grpc' | 'a2a' | 'mcp'> = {};
  if (config.grpc) {
    // Bound to every interface, the listening host is no address to advertise: the public URL's host is.
    const host = isWildcardAddress(config.grpc.host) ? new URL(publicUrl).hostname : config.grpc.host;
    const endpoint = config.grpc.publicEndpoint ?? `${host}:${grpcPort || config.grpc.port}`;
    transports.grpc = { endpoint, proto: `${publicUrl}proto/gateway.proto` };
  }
  // The A2A agent card (PROTOCOL.md 2.2, 2.4); never a flag in the events capability's push block.
  if (config.a2a.enabled) transports.a2a = { agent_card_url: `${publicUrl}.well-known/agent-card.json` };
  if (config.mcp.enabled) transports.mcp = mcpBlock(publicUrl, config.auth, tokenUrl);
  return transports;
}

/**
 * The gateway's `mcp` transport block (PROTOCOL.md 2.4): Streamable HTTP at `{publicUrl}mcp`,
 * events pushed as notifications, and the credentials in the `headers` form of 2.6 (oauth2: the
 * token endpoint and scopes, as `PROTO.authentication`).
 */
export function mcpBlock(publicUrl: string, auth: AuthConfig, tokenUrl?: string): Record<string, unknown> {
  const block: Record<string, unknown> = { transport: 'http', server: `${publicUrl}mcp`, push: true };
  if (auth.type === 'oauth2') {
    block.authentication = { type: 'oauth2', ...(tokenUrl && { tokenUrl }), scopes: oauth2Scopes(auth) };
  } else if (auth.type === 'apiKey') {
    block.authentication = { type: 'apiKey', headers: [{ name: auth.header, description: 'API key (Authorization: Bearer <key> works too)' }] };
  } else if (auth.type === 'bearer') {
    block.authentication = { type: 'bearer', scheme: 'Bearer' };
  }
  return block;
}
