/**
 * The few `node:http` helpers the example backends share: JSON bodies in and out, listening on a
 * port and closing idempotently, and the `--port` flag of their command lines. No framework: the
 * examples stay readable as plain HTTP.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request handler that may be async; a throw becomes a 500. */
export type Handler = (req: IncomingMessage, res: ServerResponse, url: URL) => void | Promise<void>;

/** Largest request body the examples read, in bytes (1 MiB); a larger one is refused with 413. */
export const maxBodyBytes = 1 << 20;

/** A request body that could not be read as JSON; `status` is what to answer. */
export class BodyError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Writes `body` as JSON with `status` (content type `application/json` unless given). */
export function sendJson(res: ServerResponse, status: number, body: unknown, contentType = 'application/json'): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Writes the protocol's error body `{ error: { code, message, details? } }` (PROTOCOL-NOTES.md, Errors). */
export function sendError(res: ServerResponse, status: number, code: string, message: string, details?: object): void {
  sendJson(res, status, { error: details ? { code, message, details } : { code, message } });
}

/** Writes a small HTML page. */
export function sendHtml(res: ServerResponse, title: string, text: string): void {
  const html = `<!doctype html><html><head><title>${title}</title></head><body><h1>${title}</h1><p>${text}</p></body></html>`;
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': Buffer.byteLength(html) });
  res.end(html);
}

/** Reads the whole body as UTF-8 text, at most `maxBodyBytes`. */
async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > maxBodyBytes) throw new BodyError(413, 'request body too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads and parses a JSON body; throws `BodyError` (400 or 413) when it is not JSON or too large. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  const text = await readText(req);
  try {
    return JSON.parse(text);
  } catch {
    throw new BodyError(400, 'request body is not valid JSON');
  }
}

/** True for a plain JSON object (not an array, not null). */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A server running `handler`; a thrown error becomes a 500 unless headers were already sent. */
export function serve(handler: Handler): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    Promise.resolve(handler(req, res, url)).catch((error: unknown) => {
      if (res.headersSent) return res.destroy();
      sendJson(res, 500, { message: error instanceof Error ? error.message : String(error) });
    });
  });
}

/** Listens on `port` (0 = any free port) and `host`; resolves the base URL without a trailing `/`. */
export async function listen(server: Server, port: number, host: string): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const hostPart = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `http://${hostPart}:${address.port}`;
}

/** A `close()` that stops `server`, drops open connections (SSE), and is safe to call twice. */
export function closer(server: Server, beforeClose: () => void = () => {}): () => Promise<void> {
  let closing: Promise<void> | undefined;
  return () => {
    closing ??= new Promise<void>((resolve) => {
      beforeClose();
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closing;
  };
}

/** The value of `--port N` (or `--port=N`) in `argv`, else `fallback`. */
export function portFromArgv(argv: string[], fallback: number): number {
  const index = argv.findIndex((arg) => arg === '--port' || arg.startsWith('--port='));
  if (index < 0) return fallback;
  const raw = argv[index].includes('=') ? argv[index].split('=')[1] : argv[index + 1];
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`--port: not a port number: ${raw}`);
  return port;
}

/** The value of `--name V` (or `--name=V`) in `argv`, else `fallback` (e.g. `--host 0.0.0.0` in a container). */
export function optionFromArgv(argv: string[], name: string, fallback: string): string {
  const index = argv.findIndex((arg) => arg === `--${name}` || arg.startsWith(`--${name}=`));
  if (index < 0) return fallback;
  const raw = argv[index].includes('=') ? argv[index].slice(argv[index].indexOf('=') + 1) : argv[index + 1];
  if (!raw) throw new Error(`--${name}: needs a value`);
  return raw;
}

/** Runs `close` on the first SIGINT or SIGTERM, then exits 0 (for command-line entry points only). */
export function closeOnSignal(close: () => Promise<unknown>): void {
  const stop = (): void => {
    close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
