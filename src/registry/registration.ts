/**
 * The body of `POST /services`: the descriptor fields of PROTOCOL-NOTES.md (Services) without
 * `status`, checked field by field with bounded sizes (PROTOCOL-NOTES.md, Input limits). Every
 * refusal is a 400 `INVALID_PARAMETER` naming the field. Fields the protocol does not define are
 * ignored; `status` is refused (the gateway reports it). The endpoint's safety is the SSRF guard's job.
 */
import { invalidField, objectField, stringField, typeListField } from '../body-fields.ts';

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
  const root = objectField(body, 'body');
  if (root.status !== undefined) throw invalidField('status', 'is reported by the gateway and cannot be registered');
  const id = stringField(root.id, 'id', 63);
  if (!SERVICE_ID.test(id)) throw invalidField('id', 'must match [a-z][a-z0-9-]* (at most 63 characters)');
  const registration: Registration = { id, name: stringField(root.name, 'name', MAX_NAME_LENGTH) };
  if (root.description !== undefined) registration.description = stringField(root.description, 'description', MAX_DESCRIPTION_LENGTH);
  if (root.version !== undefined) registration.version = stringField(root.version, 'version', MAX_NAME_LENGTH);
  if (root.type !== undefined) registration.type = stringField(root.type, 'type', MAX_NAME_LENGTH);
  if (root.endpoint !== undefined) registration.endpoint = stringField(root.endpoint, 'endpoint', MAX_URL_LENGTH);
  if (root.accepts !== undefined) registration.accepts = typeListField(root.accepts, 'accepts', MAX_TYPES, MAX_NAME_LENGTH);
  if (root.produces !== undefined) registration.produces = typeListField(root.produces, 'produces', MAX_TYPES, MAX_NAME_LENGTH);
  if (root.metadata !== undefined) registration.metadata = metadata(root.metadata);
  return registration;
}


function metadata(value: unknown): Record<string, unknown> {
  const map = objectField(value, 'metadata');
  if (Buffer.byteLength(JSON.stringify(map)) > MAX_METADATA_BYTES) throw invalidField('metadata', `must be at most ${MAX_METADATA_BYTES} bytes of JSON`);
  return map;
}



