/**
 * The capabilities the gateway implements so far, each with exactly the routes that exist
 * (never `active` with a missing route). Later features add theirs here.
 */
import type { GatewayConfig } from '../config/types.ts';
import type { CapabilitySpec } from './capabilities.ts';

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
  ],
  push: { sse: true, webhook: true, mcp: false, a2a: false },
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

/** The gateway's capability specs for a configuration. */
export function gatewayCapabilitySpecs(_config: GatewayConfig): CapabilitySpec[] {
  return [EVENTS_CAPABILITY, COMMANDS_CAPABILITY];
}
