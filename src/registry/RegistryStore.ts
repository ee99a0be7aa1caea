/**
 * The port of the service registry's durable state: the services registered at runtime
 * (`POST /services`) and which services are paused (`POST /services/{id}/pause`), configured ones
 * included, so both survive a restart. Implemented in memory and in SQLite, both run through one
 * contract suite (`test/registry/store-contract.ts`).
 */

/** A service as registered (`POST /services`): the descriptor fields the caller gives. */
export interface RegisteredService {
  /** `[a-z][a-z0-9-]*`, as in `/services/{id}`. */
  id: string;
  /** The service key (a descriptor's `name`). */
  name: string;
  description?: string;
  version?: string;
  type?: string;
  /** The backend's own address (never shown: descriptors carry the public endpoint); absent = a registry entry only. */
  endpoint?: string;
  /** Command types, as declared by an endpoint-less entry (a backend's come from the catalogue). */
  accepts?: string[];
  /** Event types, as declared by an endpoint-less entry (a backend's come from the catalogue). */
  produces?: string[];
  /** Opaque to the gateway. */
  metadata?: Record<string, unknown>;
  /** ISO 8601 time of the first registration. */
  registeredAt: string;
  /** ISO 8601 time of the last registration (an upsert). */
  updatedAt: string;
}

/** The registry's store. Every method but `open` needs an open store. */
export interface RegistryStore {
  /** Opens the store (creates tables). Idempotent. */
  open(): Promise<void>;
  /** Every registered service, oldest registration first. */
  list(): Promise<RegisteredService[]>;
  /** Inserts or replaces a service (a replaced one keeps its place in `list`). */
  put(service: RegisteredService): Promise<void>;
  /** Deletes a service and its paused mark; false when it was not there. */
  delete(id: string): Promise<boolean>;
  /** The ids of the paused services (registered or configured). */
  pausedIds(): Promise<string[]>;
  /** Marks a service paused, or not. */
  setPaused(id: string, paused: boolean): Promise<void>;
  /** Closes the store. Safe to call twice. */
  close(): Promise<void>;
}
