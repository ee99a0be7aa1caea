/**
 * Request bodies: read within `server.bodyLimit` (413 `PAYLOAD_TOO_LARGE`), then JSON syntax
 * (400 `INVALID_JSON`) and nesting depth (400 `INVALID_JSON`, checked on the text before parsing so
 * a hostile document never reaches the parser).
 */
import type { IncomingMessage } from 'node:http';
import { ProtoError } from '../errors.ts';

export interface BodyLimits {
  /** Bytes; `server.bodyLimit`. */
  maxBytes: number;
  /** `server.maxJsonDepth`. */
  maxDepth: number;
}

/** Reads the whole body as a Buffer, refusing more than `maxBytes` (declared or actual). */
export async function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBytes) {
      req.resume();
      throw tooLarge(maxBytes);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

/** Reads and parses a JSON body within the limits. */
export async function readJson(req: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  const text = (await readBody(req, limits.maxBytes)).toString('utf8');
  if (!text.trim()) throw new ProtoError('INVALID_JSON', 'the request body is empty; a JSON document is required');
  const depth = jsonDepth(text);
  if (depth > limits.maxDepth) {
    throw new ProtoError('INVALID_JSON', `JSON nesting depth exceeds the limit of ${limits.maxDepth}`, { maxDepth: limits.maxDepth });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ProtoError('INVALID_JSON', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}

/** Deepest nesting of arrays and objects in a JSON text (strings skipped); stops counting past need. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

function tooLarge(maxBytes: number): ProtoError {
  return new ProtoError('PAYLOAD_TOO_LARGE', `the request body is larger than ${maxBytes} bytes`, { limit: maxBytes });
}
