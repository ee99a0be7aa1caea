/**
 * Writing answers: JSON (or text) replies and the protocol's error body
 * `{ "error": { "code", "message", "details"? } }` (PROTOCOL-NOTES.md, Errors).
 */
import type { ServerResponse } from 'node:http';
import type { ProtoError } from '../errors.ts';
import type { Reply } from './route.ts';

/** Sends a reply: objects as JSON, strings as they are, no body for `undefined`. */
export function sendReply(res: ServerResponse, reply: Reply): void {
  for (const [name, value] of Object.entries(reply.headers ?? {})) res.setHeader(name, value);
  if (reply.body === undefined) {
    res.writeHead(reply.status).end();
    return;
  }
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  res.writeHead(reply.status, {
    'Content-Type': reply.contentType ?? (typeof reply.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json'),
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Sends a catalogued error with its status, headers and the protocol's error body. */
export function sendError(res: ServerResponse, error: ProtoError): void {
  sendReply(res, { status: error.status, body: error.toBody(), headers: error.headers });
}
