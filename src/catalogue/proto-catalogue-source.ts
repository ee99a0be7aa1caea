/**
 * Reads one of a proto backend's catalogues (PROTOCOL-NOTES.md, Commands and Queries): the list
 * `GET {endpoint}{kind}` (`{ commands: [...] }` or `{ queries: [...] }`, items
 * `{ schema, version, dataschema, description? }`), then every `GET {endpoint}{kind}/{schema}/{version}`
 * (a command's JSON Schema of `data`, maybe with `produces`; a query's
 * `{ description?, parameters?, response }`). A list answered 404 is an empty catalogue (not every
 * backend serves queries); any other failure keeps the caller's last good copy. Every request has
 * a deadline; the number of entries read per backend is bounded.
 */
import { getJson } from '../backends/backend-http.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import { joinUrl, rewriteDeep } from '../manifest/rewrite.ts';
import { commandTypeOf } from '../mapping/names.ts';

/** Deadline of one catalogue or schema request, in ms (shorter when the backend's `refresh` is). */
export const CATALOGUE_TIMEOUT_MS = 5_000;
/** Entries read per backend and catalogue at most; the rest are ignored (and logged). */
export const MAX_ENTRIES_PER_BACKEND = 1_000;
/** Schema requests in flight per backend at most. */
const SCHEMA_FETCH_CONCURRENCY = 8;
/** Safe `schema` and `version` names: they become path segments of public URLs. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Which catalogue: the path segment and the list's key. */
export type CatalogueKind = 'commands' | 'queries';

/** One entry of a proto backend's catalogue, with its document. */
export interface ProtoCatalogueEntry {
  schema: string;
  version: string;
  description?: string;
  /** The backend's own `dataschema` of the entry (sent to it on command delivery). */
  dataschema: string;
  /** The entry's document, backend URLs rewritten to public ones. */
  document: Record<string, unknown>;
}

/** What a read yielded: the entries, and those skipped as malformed. */
export interface ProtoCatalogueRead {
  entries: ProtoCatalogueEntry[];
  skipped: string[];
}

/** Reads one whole catalogue of the backend; throws when the list or any document cannot be read. */
export async function readProtoCatalogue(backend: ProtoBackend, kind: CatalogueKind): Promise<ProtoCatalogueRead> {
  const endpoint = backend.endpoint();
  const timeoutMs = Math.min(CATALOGUE_TIMEOUT_MS, backend.config.refreshMs);
  const list = await fetchDocument(joinUrl(endpoint, kind), backend, timeoutMs, { absentIsEmpty: true });
  const items = Array.isArray(list[kind]) ? (list[kind] as unknown[]) : [];
  const skipped: string[] = [];
  const wanted = items.slice(0, MAX_ENTRIES_PER_BACKEND).flatMap((item) => {
    const parsed = listItem(item, endpoint, kind);
    if (!parsed) skipped.push(JSON.stringify(item).slice(0, 200));
    return parsed ? [parsed] : [];
  });
  if (items.length > MAX_ENTRIES_PER_BACKEND) skipped.push(`${items.length - MAX_ENTRIES_PER_BACKEND} ${kind} beyond the limit`);
  const entries = await mapBounded(wanted, SCHEMA_FETCH_CONCURRENCY, async (item) => {
    const url = joinUrl(endpoint, `${kind}/${encodeURIComponent(item.schema)}/${encodeURIComponent(item.version)}`);
    const document = rewriteDeep(await fetchDocument(url, backend, timeoutMs), backend.rewrite);
    return { ...item, document };
  });
  return { entries, skipped };
}

/** One entry of a proto backend's event catalogue (PROTOCOL.md 2.7): an event type it declares. */
export interface ProtoEventEntry {
  /** The event type the entry names: `{$pascal(schema)}V{version}` (DESIGN.md, Conventions: Names). */
  type: string;
  /** Whether the backend declares a `dataschema` for it (a typed event). */
  typed: boolean;
}

/**
 * Reads a backend's event catalogue, `GET {endpoint}events/catalogue` (`{ events: [{ schema,
 * version, dataschema?, description? }] }`); a 404 is an empty catalogue. Entries with unsafe names
 * or a version that is not a whole number (event versions are, by the naming convention) are
 * skipped; at most `MAX_ENTRIES_PER_BACKEND` are read. Throws when the catalogue cannot be read.
 */
export async function readProtoEventCatalogue(backend: ProtoBackend): Promise<ProtoEventEntry[]> {
  const timeoutMs = Math.min(CATALOGUE_TIMEOUT_MS, backend.config.refreshMs);
  const list = await fetchDocument(joinUrl(backend.endpoint(), 'events/catalogue'), backend, timeoutMs, { absentIsEmpty: true });
  const items = Array.isArray(list.events) ? (list.events as unknown[]).slice(0, MAX_ENTRIES_PER_BACKEND) : [];
  return items.flatMap((item) => {
    const { schema, version, dataschema } = (item ?? {}) as Record<string, unknown>;
    if (typeof schema !== 'string' || !NAME.test(schema) || typeof version !== 'string' || !/^\d{1,9}$/.test(version)) return [];
    return [{ type: `${commandTypeOf(schema)}V${version}`, typed: typeof dataschema === 'string' && dataschema.length > 0 }];
  });
}

function listItem(item: unknown, endpoint: string, kind: CatalogueKind): Omit<ProtoCatalogueEntry, 'document'> | undefined {
  const { schema, version, description, dataschema } = (item ?? {}) as Record<string, unknown>;
  if (typeof schema !== 'string' || !NAME.test(schema) || typeof version !== 'string' || !NAME.test(version)) return undefined;
  const own = typeof dataschema === 'string' && URL.canParse(dataschema) ? dataschema : joinUrl(endpoint, `${kind}/${schema}/${version}`);
  return { schema, version, dataschema: own, ...(typeof description === 'string' && { description }) };
}

/** GETs one JSON object; with `absentIsEmpty`, a 404 is an empty object (a backend without that catalogue has none). */
async function fetchDocument(url: string, backend: ProtoBackend, timeoutMs: number, options: { absentIsEmpty?: boolean } = {}): Promise<Record<string, unknown>> {
  const answer = await getJson(url, { headers: backend.config.headers, timeoutMs, dispatcher: backend.connections?.dispatcher });
  if (answer.status === 404 && options.absentIsEmpty) return {};
  const body = answer.body;
  if (answer.status !== 200 || !body || typeof body !== 'object' || Array.isArray(body)) {
    throw new Error(`GET ${new URL(url).pathname} answered ${answer.status} without a JSON object`);
  }
  return body as Record<string, unknown>;
}

/** `work` over `items` with at most `limit` running at once; results in input order. */
async function mapBounded<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const index = next++;
      results[index] = await work(items[index]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}
