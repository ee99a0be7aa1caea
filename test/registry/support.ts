/**
 * Helpers of the registry and lifecycle tests: requests with a method and an optional key, and the
 * YAML of a gateway whose registry accepts loopback endpoints.
 */
import { getJson } from '../support/gateway.ts';

/** Sends `method` to `url` with a JSON body (when given) and an optional API key. */
export function send(method: string, url: string, body?: unknown, key?: string) {
  const headers: Record<string, string> = { ...(body !== undefined && { 'content-type': 'application/json' }), ...(key && { 'x-api-key': key }) };
  return getJson(url, { method, headers, ...(body !== undefined && { body: JSON.stringify(body) }) });
}

/** `registry` YAML admitting loopback endpoints. */
export const LOOPBACK_REGISTRY = 'registry: { allowNetworks: [127.0.0.0/8] }';

/** `auth` YAML with an admin key (`admin-key`) and a read-write key without admin (`rw-key`). */
export const ADMIN_AUTH = `auth:
  type: apiKey
  keys:
    - { id: ops, key: admin-key, scopes: [read, write, admin] }
    - { id: app, key: rw-key, scopes: [read, write] }`;
