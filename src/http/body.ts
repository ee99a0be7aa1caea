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

/**
 * Reads the whole body as a Buffer, refusing more than `maxBytes` (declared or actual; the rest is
 * drained, not read into memory). Listens for the stream's events rather than iterating it: an
 * async iterator per request (with its end-of-stream watcher) was a visible cost of every command.
 * Rejects when the client goes away before the end.
 */
export function readBody(req: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) return Promise.reject(tooLarge(maxBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const settle = (err: Error | undefined): void => {
      req.off('data', onData).off('end', onEnd).off('error', settle).off('close', onClose);
      if (err) reject(err);
      else resolve(Buffer.concat(chunks, size));
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= maxBytes) return void chunks.push(chunk);
      settle(tooLarge(maxBytes));
      req.resume();
    };
    const onEnd = (): void => settle(undefined);
    const onClose = (): void => settle(new Error('the client closed the request before its body ended'));
    req.on('data', onData).on('end', onEnd).on('error', settle).on('close', onClose);
  });
}

/** Reads and parses a JSON body within the limits. */
export async function readJson(req: IncomingMessage, limits: BodyLimits): Promise<unknown> {
  const text = (await readBody(req, limits.maxBytes)).toString('utf8');
  if (!text.trim()) throw new ProtoError('INVALID_JSON', 'the request body is empty; a JSON document is required');
  if (exceedsJsonDepth(text, limits.maxDepth)) {
    throw new ProtoError('INVALID_JSON', `JSON nesting depth exceeds the limit of ${limits.maxDepth}`, { maxDepth: limits.maxDepth });
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ProtoError('INVALID_JSON', `the request body is not valid JSON: ${(err as Error).message}`);
  }
}

/**
 * True when the text nests arrays and objects deeper than `maxDepth`. The depth is never more than
 * the number of opening brackets, which `indexOf` counts natively: a document with at most
 * `maxDepth` of them (every command seen so far) skips `jsonDepth`'s scan of each character.
 */
export function exceedsJsonDepth(text: string, maxDepth: number): boolean {
  let opening = 0;
  for (let at = text.indexOf('{'); at !== -1 && opening <= maxDepth; at = text.indexOf('{', at + 1)) opening++;
  for (let at = text.indexOf('['); at !== -1 && opening <= maxDepth; at = text.indexOf('[', at + 1)) opening++;
  return opening > maxDepth && jsonDepth(text) > maxDepth;
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
