/**
 * The query catalogue (`GET /queries`, PROTOCOL-NOTES.md, Queries): the legacy backends'
 * configured `queries` and every proto backend's own query catalogue (`GET {endpoint}queries`,
 * `/queries/{schema}/{version}`), read and refreshed like the command catalogue (the same source
 * reader and refresher). Each entry's `parameters` schema is compiled once, when it loads, with
 * type coercion: query strings are strings, and `?limit=5` must satisfy `{ type: integer }`.
 *
 * One `schema/version` belongs to one backend: a claim of one already held by a backend earlier in
 * the configuration is ignored and logged once. `GET /queries/{schema}` runs the highest version
 * of that schema.
 */
import type { Logger } from 'pino';
import type { BackendDirectory } from '../backends/directory.ts';
import type { LegacyBackend } from '../backends/legacy-backend.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import type { LegacyQueryConfig } from '../config/types.ts';
import { ProtoError } from '../errors.ts';
import { CatalogueRefresher } from './catalogue-refresher.ts';
import { readProtoCatalogue, type ProtoCatalogueEntry } from './proto-catalogue-source.ts';
import { SchemaCompiler, type DataValidator } from './schema-compiler.ts';
import { replaceDeclared } from './declared-entries.ts';

/** The document of `GET /queries/{schema}/{version}`. */
export interface QueryDocument {
  description?: string;
  /** JSON Schema of the query string's parameters. */
  parameters?: Record<string, unknown>;
  /** JSON Schema of the answer's body. */
  response: Record<string, unknown>;
}

/** A query the gateway answers, and the backend that runs it. */
export interface QueryEntry {
  schema: string;
  version: string;
  description?: string;
  backend: string;
  kind: 'legacy' | 'proto';
  /** Public URLs only. */
  document: QueryDocument;
  /** Validates the parameters and coerces them in place; absent when the query declares none. */
  validate?: DataValidator;
  /** Legacy only: the configured mapping. */
  legacy?: LegacyQueryConfig;
}

/** Item of `GET /queries` (PROTOCOL-NOTES.md). */
export interface QueryListItem {
  schema: string;
  version: string;
  dataschema: string;
  description?: string;
}

/** Options of a `QueryCatalogue`. */
export interface QueryCatalogueOptions {
  publicUrl: string;
  backends: BackendDirectory;
  logger: Logger;
}

/** A compiled entry, the text it was compiled from, and how to release its schema. */
interface Loaded {
  entry: QueryEntry;
  text: string;
  release(): void;
}

/** The aggregated query catalogue; a component (`start`, `close`). */
export class QueryCatalogue {
  readonly #options: QueryCatalogueOptions;
  readonly #compiler = new SchemaCompiler({ coerceTypes: true });
  readonly #declared = new Map<string, Loaded[]>();
  readonly #refresher: CatalogueRefresher;
  #bySchema = new Map<string, QueryEntry>();
  #reported = new Set<string>();

  constructor(options: QueryCatalogueOptions) {
    this.#options = options;
    for (const backend of options.backends.legacy()) this.#declared.set(backend.id, this.#legacyEntries(backend));
    this.#refresher = new CatalogueRefresher({ backends: options.backends, read: (backend) => this.#read(backend), forget: (id) => this.#replace(id, []) });
    // A reload adds or changes legacy backends: their entries are compiled before they replace the old ones.
    options.backends.watch({
      added: (backend) => (backend.kind === 'legacy' ? this.#replace(backend.id, this.#legacyEntries(backend)) : undefined),
      replaced: (previous, next) => {
        if (next.kind === 'legacy') this.#replace(next.id, this.#legacyEntries(next));
        else if (previous.kind === 'legacy') this.#replace(next.id, []);
      },
    });
    this.#rebuild();
  }

  /** Reads every proto backend's query catalogue, then follows manifest changes and `refresh`. */
  start(): Promise<void> {
    return this.#refresher.start();
  }

  /** Stops refreshing. Safe to call twice. */
  close(): Promise<void> {
    return this.#refresher.close();
  }

  /** `GET /queries` (of one backend when `backendId` is given). */
  list(backendId?: string, visible: (entry: QueryEntry) => boolean = () => true): QueryListItem[] {
    const items: QueryListItem[] = [];
    for (const entry of this.#bySchema.values()) {
      if ((backendId !== undefined && entry.backend !== backendId) || !visible(entry)) continue;
      const item: QueryListItem = { schema: entry.schema, version: entry.version, dataschema: this.#dataschemaOf(entry, backendId) };
      if (entry.description !== undefined) item.description = entry.description;
      items.push(item);
    }
    return items;
  }

  /** The document of `schema/version`; throws 404 `UNKNOWN_SCHEMA`. */
  document(schema: string, version: string, backendId?: string, visible: (entry: QueryEntry) => boolean = () => true): QueryDocument {
    const entry = this.#bySchema.get(`${schema}/${version}`);
    if (!entry || (backendId !== undefined && entry.backend !== backendId) || !visible(entry)) throw unknownQuery(`${schema}/${version}`);
    return entry.document;
  }

  /** The entry that runs `GET /queries/{schema}`: its highest version; throws 404 `UNKNOWN_SCHEMA`. */
  resolve(schema: string, backendId?: string, visible: (entry: QueryEntry) => boolean = () => true): QueryEntry {
    let found: QueryEntry | undefined;
    for (const entry of this.#bySchema.values()) {
      if (entry.schema !== schema || (backendId !== undefined && entry.backend !== backendId) || !visible(entry)) continue;
      if (!found || entry.version.localeCompare(found.version, 'en', { numeric: true }) > 0) found = entry;
    }
    if (!found) throw unknownQuery(schema);
    return found;
  }

  #dataschemaOf(entry: QueryEntry, backendId?: string): string {
    const base = backendId === undefined ? this.#options.publicUrl : `${this.#options.publicUrl}services/${backendId}/`;
    return `${base}queries/${entry.schema}/${entry.version}`;
  }

  async #read(backend: ProtoBackend): Promise<void> {
    const log = this.#options.logger.child({ backend: backend.id });
    try {
      const { entries, skipped } = await readProtoCatalogue(backend, 'queries');
      if (this.#refresher.closed || this.#options.backends.get(backend.id) !== backend) return;
      if (skipped.length > 0) log.warn({ skipped }, 'malformed query catalogue entries ignored');
      this.#replace(backend.id, entries.flatMap((query) => this.#protoEntry(backend, query, log)));
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'query catalogue unavailable; keeping the last good copy');
    }
  }

  #legacyEntries(backend: LegacyBackend): Loaded[] {
    return backend.config.queries.flatMap((query) => {
      const document = documentOf({ description: query.description, parameters: query.parameters, response: query.response });
      const base = { schema: query.schema, version: query.version, backend: backend.id, kind: 'legacy' as const, document, legacy: query };
      return this.#compiled(base, this.#options.logger.child({ backend: backend.id }));
    });
  }

  #protoEntry(backend: ProtoBackend, query: ProtoCatalogueEntry, log: Logger): Loaded[] {
    const document = documentOf(query.document);
    const text = JSON.stringify(document);
    const previous = this.#declared.get(backend.id)?.find((l) => l.entry.schema === query.schema && l.entry.version === query.version && l.text === text);
    if (previous) return [previous];
    const description = query.description ?? document.description;
    const base = { schema: query.schema, version: query.version, backend: backend.id, kind: 'proto' as const, document, ...(description !== undefined && { description }) };
    return this.#compiled(base, log);
  }

  /** Compiles an entry's `parameters`; an entry whose schema does not compile is left out (logged). */
  #compiled(base: Omit<QueryEntry, 'validate'>, log: Logger): Loaded[] {
    const entry: QueryEntry = { ...base, ...(base.description === undefined && base.document.description !== undefined && { description: base.document.description }) };
    const text = JSON.stringify(base.document);
    if (!base.document.parameters) return [{ entry, text, release: () => undefined }];
    try {
      const { validator, release } = this.#compiler.compile(base.document.parameters);
      return [{ entry: { ...entry, validate: validator }, text, release }];
    } catch (err) {
      log.warn({ schema: `${base.schema}/${base.version}`, err: (err as Error).message }, 'query parameters schema does not compile; query ignored');
      return [];
    }
  }

  /** Installs a backend's new entries, releases the schemas no longer used, rebuilds the index. */
  #replace(backendId: string, loaded: Loaded[]): void {
    replaceDeclared(this.#declared, backendId, loaded, this.#options.backends.get(backendId) !== undefined);
    this.#rebuild();
  }

  /** The `schema/version` index, in configuration order: a key already taken is a conflict. */
  #rebuild(): void {
    const bySchema = new Map<string, QueryEntry>();
    for (const backend of this.#options.backends.list()) {
      for (const { entry } of this.#declared.get(backend.id) ?? []) {
        const key = `${entry.schema}/${entry.version}`;
        const holder = bySchema.get(key);
        if (holder) this.#reportConflict(key, entry.backend, holder.backend);
        else bySchema.set(key, entry);
      }
    }
    this.#bySchema = bySchema;
  }

  #reportConflict(key: string, backend: string, owner: string): void {
    const id = `${key}\n${backend}\n${owner}`;
    if (this.#reported.has(id)) return;
    this.#reported.add(id);
    this.#options.logger.warn({ schema: key, backend, owner }, 'query already claimed by an earlier backend; ignored');
  }
}

/** The served document: `description?`, `parameters?`, `response` (default `{}`: anything). */
function documentOf(raw: Record<string, unknown>): QueryDocument {
  return {
    ...(typeof raw.description === 'string' && { description: raw.description }),
    ...(isObject(raw.parameters) && { parameters: raw.parameters }),
    response: isObject(raw.response) ? raw.response : {},
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function unknownQuery(name: string): ProtoError {
  return new ProtoError('UNKNOWN_SCHEMA', `no query ${name}`, { schema: name });
}
