/**
 * The public discovery manifest (`GET /.well-known/proto`): the gateway's own service and
 * capabilities, one service entry per backend with its `http.endpoint` rewritten to
 * `{publicUrl}services/{id}/`, the custom capabilities of proto backends carried over, and the
 * authentication block. No backend address survives: every string of a backend's part goes
 * through that backend's rewriter, and blocks the gateway does not front (mcp, a2a, grpc) are dropped.
 */
import type { AuthConfig } from '../config/types.ts';
import type { Backend } from '../backends/directory.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import { rewriteDeep } from './rewrite.ts';
import { GATEWAY_SERVICE } from './capabilities.ts';
import type { AuthenticationBlock, Capability, EndpointDescriptor, Manifest, ServiceEntry } from './types.ts';

const SEMVER = /^\d+\.\d+\.\d+$/;
const CAPABILITY_NAME = /^[a-z][a-z0-9]*(\.[a-z][a-z0-9_-]*)*$/;
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);

export interface AggregateInput {
  protocolVersion: string;
  gatewayVersion: string;
  publicUrl: string;
  auth: AuthConfig;
  /** With `auth.type: oauth2`: the token endpoint to advertise (configured or discovered), when known. */
  tokenUrl?: string;
  /** The gateway's own capabilities (see capabilities.ts). */
  capabilities: Capability[];
  backends: Backend[];
  /** The gateway's other transports (PROTOCOL.md 2.4): `grpc`, `a2a`, `mcp` blocks of its own service entry, when served. */
  transports?: Pick<ServiceEntry, 'grpc' | 'a2a' | 'mcp'>;
}

/** Builds the aggregated public manifest. */
export function aggregateManifest(input: AggregateInput): Manifest {
  const services: Record<string, ServiceEntry> = {
    [GATEWAY_SERVICE]: {
      version: input.gatewayVersion,
      description: 'proto-gateway: one public endpoint in front of every backend service',
      spec: `${input.publicUrl}spec/${GATEWAY_SERVICE}`,
      http: { endpoint: input.publicUrl },
      ...input.transports,
    },
  };
  const capabilities = [...input.capabilities];
  const taken = new Set(capabilities.map((c) => c.name));
  for (const backend of input.backends) {
    const part = backendPart(backend, { publicOnly: true });
    for (const [name, entry] of Object.entries(part.services)) services[name] ??= entry;
    for (const capability of part.capabilities) {
      if (taken.has(capability.name)) continue;
      taken.add(capability.name);
      capabilities.push(capability);
    }
  }
  return { PROTO: { version: input.protocolVersion, services, capabilities, authentication: authenticationBlock(input.auth, input.tokenUrl) } };
}

/** One backend's part of the manifest (`GET /services/{id}/.well-known/proto`), rewritten. */
export function backendManifest(backend: Backend, input: Pick<AggregateInput, 'protocolVersion' | 'auth' | 'tokenUrl'>): Manifest {
  const part = backendPart(backend, { publicOnly: false });
  return { PROTO: { version: input.protocolVersion, services: part.services, capabilities: part.capabilities, authentication: authenticationBlock(input.auth, input.tokenUrl) } };
}

/** The `authentication` block for the auth config (PROTOCOL.md 2.6). */
export function authenticationBlock(auth: AuthConfig, tokenUrl?: string): AuthenticationBlock {
  if (auth.type === 'oauth2') return { type: 'oauth2', ...(tokenUrl && { tokenUrl }), scopes: oauth2Scopes(auth) };
  if (auth.type === 'apiKey') return { type: 'apiKey', in: 'header', scheme: auth.header };
  if (auth.type === 'bearer') return { type: 'bearer', scheme: 'Bearer' };
  return { type: 'none' };
}

/**
 * The scopes a caller asks its identity provider for (`auth.oauth2`): the claim values of the
 * mapping table, or the gateway's own scope names when there is none.
 */
export function oauth2Scopes(auth: AuthConfig): string[] {
  return Object.keys(auth.oauth2?.scopeMap ?? { read: 1, write: 1, admin: 1 });
}

interface BackendPart {
  services: Record<string, ServiceEntry>;
  capabilities: Capability[];
}

/**
 * The services and capabilities one backend contributes. With `publicOnly`, the backend's own
 * `io.proto.*` services and capabilities are left out: the gateway's represent them.
 */
function backendPart(backend: Backend, options: { publicOnly: boolean }): BackendPart {
  const fallback = configuredService(backend);
  if (backend.kind === 'legacy' || !backend.manifest) return { services: { [backend.config.service]: fallback }, capabilities: [] };
  const services = protoServices(backend, fallback, options.publicOnly);
  const primary = Object.keys(services)[0];
  const capabilities: Capability[] = [];
  for (const raw of backend.manifest.PROTO.capabilities ?? []) {
    if (options.publicOnly && String(raw?.name).startsWith('io.proto.')) continue;
    const capability = sanitizeCapability(rewriteDeep(raw, backend.rewrite), services, primary, backend.publicBase);
    if (capability) capabilities.push(capability);
  }
  return { services, capabilities };
}

function protoServices(backend: ProtoBackend, fallback: ServiceEntry, publicOnly: boolean): Record<string, ServiceEntry> {
  const services: Record<string, ServiceEntry> = {};
  for (const [name, raw] of Object.entries(backend.manifest?.PROTO.services ?? {})) {
    if (publicOnly && name.startsWith('io.proto.')) continue;
    const entry = sanitizeService(rewriteDeep(raw, backend.rewrite), fallback, backend.publicBase);
    // The pass-through maps /services/{id}/ to one endpoint, so that is every service's public one.
    entry.http = { endpoint: backend.publicBase };
    services[name] = entry;
  }
  if (Object.keys(services).length === 0) services[backend.config.service] = fallback;
  return services;
}

/** The service entry known from the configuration alone (legacy backends, unreachable proto ones). */
function configuredService(backend: Backend): ServiceEntry {
  const { config } = backend;
  const unreachable = backend.kind === 'proto' && !backend.manifest;
  return {
    version: config.version ?? '0.0.0',
    description: config.description ?? (unreachable ? `${config.id} (not reachable yet)` : config.id),
    http: { endpoint: backend.publicBase },
  };
}

/**
 * Keeps the fields PROTOCOL.md 2.2 allows and the blocks the gateway fronts (http only, so far).
 * A URL survives only under the backend's public base: anything else (another internal host the
 * backend mentions) could be an address that must not leave.
 */
function sanitizeService(raw: Partial<ServiceEntry> | undefined, fallback: ServiceEntry, publicBase: string): ServiceEntry {
  const entry: ServiceEntry = {
    version: typeof raw?.version === 'string' && SEMVER.test(raw.version) ? raw.version : fallback.version,
    description: typeof raw?.description === 'string' && raw.description ? raw.description : fallback.description,
  };
  if (isUnder(raw?.spec, publicBase)) entry.spec = raw?.spec;
  return entry;
}

function isUnder(url: unknown, publicBase: string): url is string {
  return typeof url === 'string' && url.startsWith(publicBase);
}

/** Keeps a capability only if it is well-formed with public `spec` and `schema`; its `service` always names a listed service. */
function sanitizeCapability(raw: Partial<Capability> | undefined, services: Record<string, ServiceEntry>, primary: string | undefined, publicBase: string): Capability | undefined {
  if (!raw || typeof raw.name !== 'string' || !CAPABILITY_NAME.test(raw.name)) return undefined;
  if (typeof raw.version !== 'string' || !SEMVER.test(raw.version)) return undefined;
  if (!isUnder(raw.spec, publicBase) || !isUnder(raw.schema, publicBase) || typeof raw.description !== 'string') return undefined;
  const capability: Capability = { name: raw.name, version: raw.version, description: raw.description, spec: raw.spec, schema: raw.schema };
  if (typeof raw.extends === 'string') capability.extends = raw.extends;
  const service = typeof raw.service === 'string' && services[raw.service] ? raw.service : primary;
  if (service) capability.service = service;
  if (raw.status === 'active' || raw.status === 'partial' || raw.status === 'planned') capability.status = raw.status;
  if (Array.isArray(raw.endpoints)) capability.endpoints = raw.endpoints.filter(isEndpoint).map(pickEndpoint);
  if (raw.push && typeof raw.push === 'object') {
    capability.push = Object.fromEntries(Object.entries(raw.push).filter(([, v]) => typeof v === 'boolean'));
  }
  return capability;
}

function isEndpoint(value: unknown): value is EndpointDescriptor {
  const e = value as EndpointDescriptor;
  return !!e && METHODS.has(e.method) && typeof e.path === 'string';
}

function pickEndpoint(e: EndpointDescriptor): EndpointDescriptor {
  return typeof e.description === 'string' ? { method: e.method, path: e.path, description: e.description } : { method: e.method, path: e.path };
}
