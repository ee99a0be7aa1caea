/**
 * The body of `POST /services`: the descriptor fields of PROTOCOL-NOTES.md (Services) without
 * `status`, checked field by field with bounded sizes (PROTOCOL-NOTES.md, Input limits). Every
 * refusal is a 400 `INVALID_PARAMETER` naming the field. Fields the protocol does not define are
 * ignored; `status` is refused (the gateway reports it). The endpoint's safety is the SSRF guard's job.
 */
import { ProtoError } from '../errors.ts';

/** A service id: as a configured backend id, `[a-z][a-z0-9-]*`, at most 63 characters. */
export const SERVICE_ID = /^[a-z][a-z0-9-]{0,62}$/;
/** Longest `name`, `version`, `type`, characters. */
export const MAX_NAME_LENGTH = 200;
/** Longest `description`, characters. */
export const MAX_DESCRIPTION_LENGTH = 2000;
/** Longest `endpoint`, characters. */
export const MAX_URL_LENGTH = 2048;
/** Most entries of `accepts` or `produces`. */
export const MAX_TYPES = 1000;
/** Largest `metadata`, as JSON, bytes. */
export const MAX_METADATA_BYTES = 16 * 1024;

/** A CloudEvent or command type in PascalCase. */
const PASCAL_CASE = /^[A-Z][A-Za-z0-9]*$/;

/** A checked registration. */
export interface Registration {
  id: string;
  name: string;
  description?: string;
  version?: string;
  type?: string;
  endpoint?: string;
  accepts?: string[];
  produces?: string[];
  metadata?: Record<string, unknown>;
}

/** Checks a parsed JSON body; throws `INVALID_PARAMETER` on the first bad field. */
export function parseRegistration(body: unknown): Registration {
  const root = object(body, 'body');
  if (root.status !== undefined) throw invalid('status', 'is reported by the gateway and cannot be registered');
  const id = string(root.id, 'id', 63);
  if (!SERVICE_ID.test(id)) throw invalid('id', 'must match [a-z][a-z0-9-]* (at most 63 characters)');
  const registration: Registration = { id, name: string(root.name, 'name', MAX_NAME_LENGTH) };
  if (root.description !== undefined) registration.description = string(root.description, 'description', MAX_DESCRIPTION_LENGTH);
  if (root.version !== undefined) registration.version = string(root.version, 'version', MAX_NAME_LENGTH);
  if (root.type !== undefined) registration.type = string(root.type, 'type', MAX_NAME_LENGTH);
  if (root.endpoint !== undefined) registration.endpoint = string(root.endpoint, 'endpoint', MAX_URL_LENGTH);
  if (root.accepts !== undefined) registration.accepts = types(root.accepts, 'accepts');
  if (root.produces !== undefined) registration.produces = types(root.produces, 'produces');
  if (root.metadata !== undefined) registration.metadata = metadata(root.metadata);
  return registration;
}

function types(value: unknown, name: string): string[] {
  if (!Array.isArray(value) || value.length > MAX_TYPES) throw invalid(name, `must be an array of at most ${MAX_TYPES} types`);
  return [
    ...new Set(
      value.map((type, i) => {
        const text = string(type, `${name}[${i}]`, MAX_NAME_LENGTH);
        if (!PASCAL_CASE.test(text)) throw invalid(`${name}[${i}]`, 'must be a type in PascalCase, e.g. PlaceOrder');
        return text;
      }),
    ),
  ];
}

function metadata(value: unknown): Record<string, unknown> {
  const map = object(value, 'metadata');
  if (Buffer.byteLength(JSON.stringify(map)) > MAX_METADATA_BYTES) throw invalid('metadata', `must be at most ${MAX_METADATA_BYTES} bytes of JSON`);
  return map;
}

function object(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(name, 'must be an object');
  return value as Record<string, unknown>;
}

function string(value: unknown, name: string, maxLength: number): string {
  if (typeof value !== 'string' || value === '' || value.length > maxLength) {
    throw invalid(name, `must be a non-empty string of at most ${maxLength} characters`);
  }
  return value;
}

function invalid(parameter: string, rule: string): ProtoError {
  return new ProtoError('INVALID_PARAMETER', `${parameter} ${rule}`, { parameter });
}
