/**
 * The operator console (README, Console): the built single-page app of `console/` (committed in
 * `console/dist/`), served without credentials at `console.path`. The page has no powers of its
 * own: it calls the public API with the key the operator signs in with, so every action needs that
 * key's scopes.
 *
 * Everything is read once, at boot. Every answer carries a strict Content-Security-Policy (scripts
 * and styles from files of the same origin only, no framing), hashed assets are cached for a year
 * and the page itself is revalidated on every load.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { extname, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AuthConfig } from '../config/types.ts';
import { ProtoError } from '../errors.ts';
import type { Reply, Route } from '../http/route.ts';

/** Where the built console lives. */
export const CONSOLE_DIST = new URL('../../console/dist/', import.meta.url);

/** Headers of every console file: no inline script or style, no framing, no referrer (the URL may hold a filter). */
export const CONSOLE_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
};

/** Assets under `assets/` carry a content hash in their name: cached for a year. */
const IMMUTABLE = 'public, max-age=31536000, immutable';
/** The page and its config: revalidated on every load, so a new build shows at once. */
const REVALIDATE = 'no-cache';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.svg': 'image/svg+xml',
};

/** What the page reads from `config.json` next to it: how to present the key, and where the API is. */
export interface ConsoleConfig {
  auth: { type: AuthConfig['type']; header: string; queryParam?: string };
  /** The API base relative to the console's own URL (`../` for `/console/`), so a path prefix in front of the gateway is kept. */
  api: string;
}

export interface ConsoleOptions {
  /** `console.path`: `/console` by default; no trailing `/`. */
  path: string;
  auth: AuthConfig;
  /** The built files; default `CONSOLE_DIST`. */
  dist?: URL;
}

/** `GET {path}` (a redirect to `{path}/`), `GET {path}/` (the page) and `GET {path}/*` (its files and `config.json`). */
export function consoleRoutes(options: ConsoleOptions): Route[] {
  const files = loadFiles(options.dist ?? CONSOLE_DIST);
  files.set('config.json', fileReply('config.json', JSON.stringify(consoleConfig(options))));
  const index = files.get('index.html');
  if (!index) throw new Error(`the console is not built: no index.html in ${fileURLToPath(options.dist ?? CONSOLE_DIST)}`);
  const lastSegment = options.path.slice(options.path.lastIndexOf('/') + 1);
  return [
    // Relative, so a proxy that serves the gateway under a path prefix keeps it.
    { method: 'GET', path: options.path, public: true, handle: () => ({ status: 308, headers: { Location: `${lastSegment}/` } }) },
    { method: 'GET', path: `${options.path}/`, public: true, handle: () => index },
    {
      method: 'GET',
      path: `${options.path}/*`,
      public: true,
      handle: (ctx) => {
        const file = files.get(ctx.params['*']);
        if (!file) throw new ProtoError('NOT_FOUND', 'no such console file');
        return file;
      },
    },
  ];
}

/** The configuration the page needs; public, as the 401 challenge names the header anyway. */
export function consoleConfig(options: ConsoleOptions): ConsoleConfig {
  const auth: ConsoleConfig['auth'] = { type: options.auth.type, header: options.auth.header };
  if (options.auth.queryParam !== undefined) auth.queryParam = options.auth.queryParam;
  const depth = options.path.split('/').length - 1;
  return { auth, api: '../'.repeat(depth) };
}

/** Every built file by its path relative to `dist`, as a ready reply (read as text: the build has no binary assets). */
function loadFiles(dist: URL): Map<string, Reply> {
  const root = fileURLToPath(dist);
  const files = new Map<string, Reply>();
  for (const entry of readdirSync(root, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const path = relative(root, `${entry.parentPath}/${entry.name}`).split('\\').join('/');
    files.set(path, fileReply(path, readFileSync(`${entry.parentPath}/${entry.name}`, 'utf8')));
  }
  return files;
}

function fileReply(path: string, body: string): Reply {
  return {
    status: 200,
    body,
    contentType: CONTENT_TYPES[extname(path)] ?? 'application/octet-stream',
    headers: { ...CONSOLE_SECURITY_HEADERS, 'Cache-Control': path.startsWith('assets/') ? IMMUTABLE : REVALIDATE },
  };
}
