/**
 * Reads a proto backend's command catalogue: `GET {endpoint}commands` (PROTOCOL-NOTES.md:
 * `{ commands: [{ schema, version, dataschema, description? }] }`), then every
 * `GET {endpoint}commands/{schema}/{version}` (the JSON Schema of `data`, maybe with `produces`).
 * Every request has a deadline; the number of commands read per backend is bounded.
 */
import { getJson } from '../backends/backend-http.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import { joinUrl, rewriteDeep } from '../manifest/rewrite.ts';

/** Deadline of one catalogue or schema request, in ms (shorter when the backend's `refresh` is). */
export const CATALOGUE_TIMEOUT_MS = 5_000;
/** Commands read per backend at most; the rest are ignored (and logged). */
export const MAX_COMMANDS_PER_BACKEND = 1_000;
/** Schema requests in flight per backend at most. */
const SCHEMA_FETCH_CONCURRENCY = 8;
/** Safe `schema` and `version` names: they become path segments of public URLs. */
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** One command of a proto backend's catalogue, with its schema document. */
export interface ProtoCommand {
  schema: string;
  version: string;
  description?: string;
  /** The backend's own `dataschema` of the command (sent to it on delivery). */
  dataschema: string;
  /** The schema document, backend URLs rewritten to public ones. */
  document: Record<string, unknown>;
}

/** What a read yielded: the commands, and the entries skipped as malformed. */
export interface ProtoCatalogueRead {
  commands: ProtoCommand[];
  skipped: string[];
}

/** Reads the backend's whole command catalogue; throws when the list or any schema cannot be read. */
export async function readProtoCommands(backend: ProtoBackend): Promise<ProtoCatalogueRead> {
  const endpoint = backend.endpoint();
  const timeoutMs = Math.min(CATALOGUE_TIMEOUT_MS, backend.config.refreshMs);
  const list = await fetchDocument(joinUrl(endpoint, 'commands'), backend, timeoutMs);
  const items = Array.isArray(list.commands) ? list.commands : [];
  const skipped: string[] = [];
  const wanted = items.slice(0, MAX_COMMANDS_PER_BACKEND).flatMap((item) => {
    const parsed = listItem(item, endpoint);
    if (!parsed) skipped.push(JSON.stringify(item).slice(0, 200));
    return parsed ? [parsed] : [];
  });
  if (items.length > MAX_COMMANDS_PER_BACKEND) skipped.push(`${items.length - MAX_COMMANDS_PER_BACKEND} commands beyond the limit`);
  const commands = await mapBounded(wanted, SCHEMA_FETCH_CONCURRENCY, async (item) => {
    const url = joinUrl(endpoint, `commands/${encodeURIComponent(item.schema)}/${encodeURIComponent(item.version)}`);
    const document = rewriteDeep(await fetchDocument(url, backend, timeoutMs), backend.rewrite);
    return { ...item, document };
  });
  return { commands, skipped };
}

function listItem(item: unknown, endpoint: string): Omit<ProtoCommand, 'document'> | undefined {
  const { schema, version, description, dataschema } = (item ?? {}) as Record<string, unknown>;
  if (typeof schema !== 'string' || !NAME.test(schema) || typeof version !== 'string' || !NAME.test(version)) return undefined;
  const own = typeof dataschema === 'string' && URL.canParse(dataschema) ? dataschema : joinUrl(endpoint, `commands/${schema}/${version}`);
  return { schema, version, dataschema: own, ...(typeof description === 'string' && { description }) };
}

async function fetchDocument(url: string, backend: ProtoBackend, timeoutMs: number): Promise<Record<string, unknown>> {
  const answer = await getJson(url, { headers: backend.config.headers, timeoutMs });
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
