/**
 * Request ids and W3C trace context (https://www.w3.org/TR/trace-context/). A sane incoming
 * `X-Request-Id` is kept, otherwise one is made; a valid incoming `traceparent` is forwarded to
 * backends as it is, otherwise a new one starts the trace here.
 */
import { randomFillSync, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Bytes of randomness drawn at once for new trace ids (one `randomFillSync` per 170 traceparents, not two per request). */
const POOL_BYTES = 4080;
/** Bytes a traceparent takes: a 16-byte trace id and an 8-byte parent id. */
const TRACE_BYTES = 24;
const pool = Buffer.alloc(POOL_BYTES);
let poolOffset = POOL_BYTES;
const TRACEPARENT = /^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The request id: the caller's `X-Request-Id` when well-formed, else a new UUID. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers['x-request-id'];
  return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
}

/** The `traceparent` to forward: the caller's when valid, else a new sampled one. */
export function traceparentOf(req: IncomingMessage): string {
  const given = req.headers.traceparent;
  if (typeof given === 'string' && TRACEPARENT.test(given.trim().toLowerCase())) return given.trim().toLowerCase();
  return newTraceparent();
}

/** A fresh `traceparent` (version 00, sampled). */
export function newTraceparent(): string {
  if (poolOffset + TRACE_BYTES > POOL_BYTES) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  const at = poolOffset;
  poolOffset += TRACE_BYTES;
  return `00-${pool.toString('hex', at, at + 16)}-${pool.toString('hex', at + 16, at + TRACE_BYTES)}-01`;
}
