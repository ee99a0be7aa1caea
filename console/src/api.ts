/**
 * The console's only way to the gateway: the public API, with the operator's key presented the way
 * `auth` says (the configured header for `apiKey`, `Authorization: Bearer` for `bearer`, the query
 * parameter for EventSource, which cannot send headers). URLs resolve against `config.api`, which
 * is relative to the page, so a path prefix in front of the gateway is kept.
 */

/** `config.json`, served next to the page (src/console/console-routes.ts). */
export interface ConsoleConfig {
  auth: { type: 'none' | 'apiKey' | 'bearer'; header: string; queryParam?: string };
  api: string;
}

/** An answer other than 2xx, with the protocol's error code when the body had one. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string | undefined;

  constructor(status: number, code: string | undefined, message: string) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const KEY_ITEM = 'proto-gateway.console.key';

/** The key of this tab's session, if signed in. */
export function storedKey(): string | undefined {
  return sessionStorage.getItem(KEY_ITEM) ?? undefined;
}

/** Keeps (or, with undefined, forgets) the key for this tab only. */
export function storeKey(key: string | undefined): void {
  if (key === undefined) sessionStorage.removeItem(KEY_ITEM);
  else sessionStorage.setItem(KEY_ITEM, key);
}

/** Reads `config.json` next to the page. */
export async function loadConfig(): Promise<ConsoleConfig> {
  const res = await fetch(new URL('config.json', document.baseURI));
  if (!res.ok) throw new Error(`config.json: HTTP ${res.status}`);
  return (await res.json()) as ConsoleConfig;
}

/** Calls the public API as one principal. */
export class Api {
  readonly config: ConsoleConfig;
  readonly #key: string | undefined;

  constructor(config: ConsoleConfig, key: string | undefined) {
    this.config = config;
    this.#key = key;
  }

  /** The absolute URL of an API path (`services`, `events/stream`…) with `query` (empty values left out). */
  url(path: string, query: Record<string, string | undefined> = {}): URL {
    const url = new URL(path, new URL(this.config.api, document.baseURI));
    for (const [name, value] of Object.entries(query)) if (value) url.searchParams.set(name, value);
    return url;
  }

  /** The URL of an event stream: EventSource sends no headers, so the key goes in `auth.queryParam`. */
  streamUrl(query: Record<string, string | undefined>): URL {
    const url = this.url('events/stream', query);
    const param = this.config.auth.queryParam;
    if (this.#key !== undefined && param) url.searchParams.set(param, this.#key);
    return url;
  }

  /** Whether live streams can authenticate (auth off, or a query parameter configured). */
  get canStream(): boolean {
    return this.config.auth.type === 'none' || (this.config.auth.type === 'apiKey' && this.config.auth.queryParam !== undefined);
  }

  get<T>(path: string, query: Record<string, string | undefined> = {}): Promise<T> {
    return this.#call<T>('GET', this.url(path, query));
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.#call<T>('POST', this.url(path), body);
  }

  async #call<T>(method: string, url: URL, body?: unknown): Promise<T> {
    const headers = this.#headers();
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    if (!res.ok) throw await errorOf(res);
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  #headers(): Record<string, string> {
    if (this.#key === undefined || this.config.auth.type === 'none') return {};
    if (this.config.auth.type === 'bearer') return { Authorization: `Bearer ${this.#key}` };
    return { [this.config.auth.header]: this.#key };
  }
}

async function errorOf(res: Response): Promise<ApiError> {
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string } };
    return new ApiError(res.status, body.error?.code, body.error?.message ?? `HTTP ${res.status}`);
  } catch {
    return new ApiError(res.status, undefined, `HTTP ${res.status}`);
  }
}
