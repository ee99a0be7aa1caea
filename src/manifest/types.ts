/** The discovery manifest's shapes (PROTOCOL.md 2.1–2.6). */

export interface EndpointDescriptor {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  description?: string;
}

export interface Capability {
  name: string;
  version: string;
  description: string;
  spec: string;
  schema: string;
  extends?: string;
  service?: string;
  status?: 'active' | 'partial' | 'planned';
  endpoints?: EndpointDescriptor[];
  /** Push channels of the events capability (PROTOCOL.md 2.3). */
  push?: Record<string, boolean>;
}

export interface ServiceEntry {
  version: string;
  description: string;
  spec?: string;
  http?: { endpoint: string };
  mcp?: Record<string, unknown>;
  a2a?: { agent_card_url: string };
  grpc?: { endpoint: string; proto?: string };
}

export interface AuthenticationBlock {
  type: 'none' | 'bearer' | 'apiKey' | 'oauth2';
  scheme?: string;
  in?: 'header' | 'query';
  scopes?: string[];
  tokenUrl?: string;
  docs?: string;
}

export interface Manifest {
  PROTO: {
    version: string;
    services: Record<string, ServiceEntry>;
    capabilities: Capability[];
    agents?: unknown[];
    authentication?: AuthenticationBlock;
  };
}
