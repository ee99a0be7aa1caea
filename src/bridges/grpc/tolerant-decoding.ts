/** Request decoding that turns bad protobuf from a client into INVALID_ARGUMENT, never INTERNAL. */
import type * as grpc from '@grpc/grpc-js';
import { ProtoError } from '../../errors.ts';

/** What a request that is not valid protobuf of its message type decodes to (see `tolerantDecoding`). */
const UNDECODABLE = Symbol('undecodable request');

export function isUndecodable(request: unknown): boolean {
  return typeof request === 'object' && request !== null && UNDECODABLE in request;
}

/** The request, or INVALID_ARGUMENT when its bytes were not a valid message. */
export function decoded<Req>(request: Req): Req {
  if (isUndecodable(request)) throw new ProtoError('INVALID_JSON', 'the request is not a valid protobuf message of its type');
  return request;
}

/**
 * The service definition with request decoders that never throw: grpc-js answers a decoder's
 * exception with INTERNAL ("Error deserializing request"), a server fault, for what is bad input
 * from the client. A message that does not decode becomes a marker the handlers refuse with
 * INVALID_ARGUMENT (regression: corrupted protobuf found by the fuzz suite).
 */
export function tolerantDecoding(service: grpc.ServiceDefinition): grpc.ServiceDefinition {
  return Object.fromEntries(Object.entries(service).map(([name, method]) => {
    const decode = method.requestDeserialize;
    const requestDeserialize = (bytes: Buffer): unknown => {
      try {
        return decode(bytes);
      } catch {
        return { [UNDECODABLE]: true };
      }
    };
    return [name, { ...method, requestDeserialize }];
  }));
}
