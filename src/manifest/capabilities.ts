/**
 * The gateway's own capabilities. Each feature declares a `CapabilitySpec` (name, endpoints, the
 * name of its JSON Schema); this turns them into manifest capabilities whose `spec` and `schema`
 * point at the gateway's own `/spec/{capability}` and `/schemas/{name}.json`.
 */
import type { Capability, EndpointDescriptor } from './types.ts';

/** The gateway's own service key in the manifest. */
export const GATEWAY_SERVICE = 'io.proto.agents';

/** What a feature declares about the capability it implements. */
export interface CapabilitySpec {
  name: string;
  version: string;
  description: string;
  /** Name of the schema served at `/schemas/{schemaName}.json`. */
  schemaName: string;
  endpoints: EndpointDescriptor[];
  extends?: string;
  status?: Capability['status'];
  push?: Record<string, boolean>;
}

/** The manifest form of the gateway's capabilities. */
export function gatewayCapabilities(specs: CapabilitySpec[], publicUrl: string): Capability[] {
  return specs.map((spec) => {
    const capability: Capability = {
      name: spec.name,
      version: spec.version,
      description: spec.description,
      spec: `${publicUrl}spec/${spec.name}`,
      schema: `${publicUrl}schemas/${spec.schemaName}.json`,
      service: GATEWAY_SERVICE,
    };
    if (spec.extends) capability.extends = spec.extends;
    if (spec.status) capability.status = spec.status;
    capability.endpoints = spec.endpoints;
    if (spec.push) capability.push = spec.push;
    return capability;
  });
}
