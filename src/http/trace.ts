/**
 * Request ids and W3C trace context (https://www.w3.org/TR/trace-context/). A sane incoming
 * `X-Request-Id` is kept, otherwise one is made; a valid incoming `traceparent` is forwarded to
 * backends as it is, otherwise a new one starts the trace here.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
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
  return `00-${randomBytes(16).toString('hex')}-${randomBytes(8).toString('hex')}-01`;
}
