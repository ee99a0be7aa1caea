/**
 * The gateway's error catalogue in gRPC terms: each catalogue code maps to one gRPC status code
 * (gRPC status codes, https://grpc.github.io/grpc/core/md_doc_statuscodes.html), and the protocol's
 * code and details travel in trailing metadata (`proto-error-code`, `proto-error-details` as JSON),
 * the message in the status details.
 */
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import { errorStatus, isProtoError, type ErrorCode } from '../../errors.ts';

const BY_CODE: Partial<Record<ErrorCode, status>> = {
  UNAUTHENTICATED: status.UNAUTHENTICATED,
  FORBIDDEN: status.PERMISSION_DENIED,
  NOT_FOUND: status.NOT_FOUND,
  UNKNOWN_SCHEMA: status.NOT_FOUND,
  SERVICE_NOT_FOUND: status.NOT_FOUND,
  INVALID_JSON: status.INVALID_ARGUMENT,
  INVALID_ENVELOPE: status.INVALID_ARGUMENT,
  DATASCHEMA_MISMATCH: status.INVALID_ARGUMENT,
  VALIDATION_FAILED: status.INVALID_ARGUMENT,
  INVALID_PARAMETER: status.INVALID_ARGUMENT,
  INVALID_CURSOR: status.INVALID_ARGUMENT,
  PAYLOAD_TOO_LARGE: status.INVALID_ARGUMENT,
  UNKNOWN_COMMAND_TYPE: status.FAILED_PRECONDITION,
  COMMAND_NOT_ACCEPTED: status.FAILED_PRECONDITION,
  DUPLICATE_COMMAND: status.ALREADY_EXISTS,
  CONFLICT: status.ALREADY_EXISTS,
  RATE_LIMITED: status.RESOURCE_EXHAUSTED,
  TOO_MANY_STREAMS: status.RESOURCE_EXHAUSTED,
  SLOW_CONSUMER: status.RESOURCE_EXHAUSTED,
  BACKEND_TIMEOUT: status.DEADLINE_EXCEEDED,
  BACKEND_UNAVAILABLE: status.UNAVAILABLE,
  NOT_READY: status.UNAVAILABLE,
  STREAMS_EXHAUSTED: status.UNAVAILABLE,
};

/**
 * A thrown error as a gRPC error: catalogue errors by the table, anything else INTERNAL (the cause
 * stays in the log). Every one carries `proto-error-code` (`INTERNAL` for the latter).
 */
export function grpcError(err: unknown): Partial<ServiceError> & { code: status } {
  const metadata = new Metadata();
  if (!isProtoError(err)) {
    metadata.set('proto-error-code', 'INTERNAL');
    return { code: status.INTERNAL, details: 'internal error', metadata };
  }
  metadata.set('proto-error-code', err.code);
  if (err.details !== undefined) metadata.set('proto-error-details', asciiJson(err.details));
  const httpStatus = errorStatus[err.code];
  const code = BY_CODE[err.code] ?? (httpStatus === 503 ? status.UNAVAILABLE : httpStatus === 429 ? status.RESOURCE_EXHAUSTED : httpStatus >= 500 ? status.INTERNAL : status.INVALID_ARGUMENT);
  return { code, details: err.message, metadata };
}

/**
 * JSON with every character outside printable ASCII escaped (`\uXXXX`): still the same JSON, and a
 * legal metadata value (grpc-js throws on anything else; a caller's emoji in `details.value` ended
 * the process; regression found by the fuzz suite, seed 1354455301).
 */
function asciiJson(value: unknown): string {
  return JSON.stringify(value).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** The name of a status code, for metric labels (`OK`, `INVALID_ARGUMENT`…). */
export function statusName(code: number): string {
  return status[code] ?? 'UNKNOWN';
}
