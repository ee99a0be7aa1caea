/**
 * Service descriptors (PROTOCOL-NOTES.md, Services; `schemas/service-descriptor.json`) of the
 * backends and registry entries, and their `status`: a paused backend is `paused`; a proto
 * backend whose manifest cannot be read, or any backend whose circuit is open, is `error`; an
 * entry without an endpoint is `stopped`; everything else is `running`. A descriptor's `endpoint`
 * is always the public `{publicUrl}services/{id}/`, never the backend's address.
 */
import type { Backend } from '../backends/directory.ts';
import { primaryService } from '../backends/proto-backend.ts';
import type { RegisteredService } from './RegistryStore.ts';

/** What the gateway reports a service to be doing. */
export type ServiceStatus = 'running' | 'paused' | 'stopped' | 'error';

/** A service descriptor. */
export interface ServiceDescriptor {
  id: string;
  name: string;
  description?: string;
  version?: string;
  type?: string;
  endpoint?: string;
  accepts: string[];
  produces: string[];
  status: ServiceStatus;
  metadata?: Record<string, unknown>;
}

/** What the descriptor of a backend needs beside the backend itself. */
export interface BackendFacts {
  paused: boolean;
  /** Command types, from the command catalogue. */
  accepts: string[];
  /** Event types, from the event catalogue. */
  produces: string[];
  /** The registration of a runtime backend (its descriptor fields win over the manifest's). */
  registered?: RegisteredService;
}

/** The status of a backend. */
export function backendStatus(backend: Backend, paused: boolean): ServiceStatus {
  if (paused) return 'paused';
  if (backend.circuit.state === 'open') return 'error';
  if (backend.kind === 'proto' && (backend.lastError !== undefined || !backend.manifest)) return 'error';
  return 'running';
}

/** The descriptor of a backend (configured, or registered with an endpoint). */
export function describeBackend(backend: Backend, facts: BackendFacts): ServiceDescriptor {
  const own = backend.kind === 'proto' ? primaryService(backend.manifest)?.[1] : undefined;
  const registered = facts.registered;
  const descriptor: ServiceDescriptor = {
    id: backend.id,
    name: registered?.name ?? backend.config.service,
    type: registered?.type ?? backend.kind,
    endpoint: backend.publicBase,
    accepts: facts.accepts,
    produces: facts.produces,
    status: backendStatus(backend, facts.paused),
  };
  const description = registered?.description ?? backend.config.description ?? own?.description;
  const version = registered?.version ?? backend.config.version ?? own?.version;
  if (typeof description === 'string') descriptor.description = description;
  if (typeof version === 'string') descriptor.version = version;
  if (registered?.metadata !== undefined) descriptor.metadata = registered.metadata;
  return ordered(descriptor);
}

/** The descriptor of a registry entry without an endpoint: `stopped`, its declared types. */
export function describeEntry(entry: RegisteredService): ServiceDescriptor {
  const descriptor: ServiceDescriptor = {
    id: entry.id,
    name: entry.name,
    accepts: entry.accepts ?? [],
    produces: entry.produces ?? [],
    status: 'stopped',
  };
  if (entry.description !== undefined) descriptor.description = entry.description;
  if (entry.version !== undefined) descriptor.version = entry.version;
  if (entry.type !== undefined) descriptor.type = entry.type;
  if (entry.metadata !== undefined) descriptor.metadata = entry.metadata;
  return ordered(descriptor);
}

/** The fields in the order of PROTOCOL-NOTES.md (readable answers; JSON does not care). */
function ordered(d: ServiceDescriptor): ServiceDescriptor {
  const keys: Array<keyof ServiceDescriptor> = ['id', 'name', 'description', 'version', 'type', 'endpoint', 'accepts', 'produces', 'status', 'metadata'];
  return Object.fromEntries(keys.filter((key) => d[key] !== undefined).map((key) => [key, d[key]])) as unknown as ServiceDescriptor;
}
