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

/**
 * A registry store several replicas share (Redis): an optional capability beside the port. Every
 * change bumps a version and sends a change notice, so each replica re-reads the registry when
 * told, and also when its version check finds a version it has not read (a notice it missed).
 */
export interface SharedRegistryStore extends RegistryStore {
  /** The version of the shared registry: bumped by every put, delete and pause change. */
  version(): Promise<number>;
  /** Calls `listener` on every change notice of any replica, and after a lost notice connection comes back; returns the function that stops it. */
  watch(listener: () => void): Promise<() => void>;
}

/** True when `store` is shared by several replicas (has `version` and `watch`). */
export function isSharedRegistryStore(store: RegistryStore): store is SharedRegistryStore {
  return typeof (store as Partial<SharedRegistryStore>).version === 'function' && typeof (store as Partial<SharedRegistryStore>).watch === 'function';
}
