/**
 * The event-type catalogue (`GET /events/catalogue`, PROTOCOL.md 2.7) and the event schemas
 * (`GET /events/{schema}/{version}`, PROTOCOL.md 4.4). Types come from the legacy `records[].types`,
 * from every proto backend's own event catalogue (read at start and every `refresh`, so a type it
 * declares typed is listed with its `dataschema`, and its schema served, before the first event of
 * it), and from every type seen in the log; the set of known types is kept in the store, so it
 * survives restarts. A typed event's schema is the legacy `records[].schema`, or, for a proto backend,
 * fetched from its `{endpoint}events/{schema}/{version}` and cached (rewritten to public URLs).
 * The types of a backend removed at runtime are forgotten with it.
 */
import type { Logger } from 'pino';
import type { Backend, BackendDirectory } from '../backends/directory.ts';
import type { LegacyBackend } from '../backends/legacy-backend.ts';
import { getJson } from '../backends/backend-http.ts';
import { ProtoError } from '../errors.ts';
import type { EventLog, StoredEvent } from '../log/EventLog.ts';
import { joinUrl, rewriteDeep } from '../manifest/rewrite.ts';
import { eventSchemaOf } from '../mapping/names.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import { CatalogueRefresher } from './catalogue-refresher.ts';
import { readProtoEventCatalogue } from './proto-catalogue-source.ts';

/** Catalogue entry (PROTOCOL.md 2.7). */
export interface EventCatalogueEntry {
  schema: string;
  version: string;
  dataschema?: string;
  description?: string;
}

/** A known event type and where its schema lives. */
interface KnownType {
  type: string;
  backend: string;
  typed: boolean;
}

/** Where the seen types are kept in the store. */
const CHECKPOINT_KEY = 'catalogue:event-types';
/** At most this many distinct types are remembered (a misbehaving backend cannot grow it without bound). */
export const MAX_EVENT_TYPES = 10_000;
/** How long a proto backend may take to serve an event schema. */
const SCHEMA_TIMEOUT_MS = 5_000;

export interface EventCatalogueOptions {
  publicUrl: string;
  log: EventLog;
  backends: BackendDirectory;
  logger: Logger;
}

export class EventCatalogue {
  readonly #options: EventCatalogueOptions;
  /** By `{schema}/{version}`; the first backend to produce a type owns its schema. */
  readonly #types = new Map<string, KnownType>();
  readonly #schemas = new Map<string, Record<string, unknown>>();
  #unsubscribe: (() => void) | undefined;
  #refresher: CatalogueRefresher | undefined;
  #saving: Promise<void> = Promise.resolve();

  constructor(options: EventCatalogueOptions) {
    this.#options = options;
    for (const backend of options.backends.legacy()) this.#declareRecords(backend);
    options.backends.watch({
      removed: (backend) => this.#forget(backend.id),
      // A reload: a legacy backend's records declare their types again (a new schema replaces the old).
      added: (backend) => (backend.kind === 'legacy' ? this.#declareRecords(backend) : undefined),
      replaced: (_previous, next) => (next.kind === 'legacy' ? this.#declareRecords(next) : undefined),
    });
  }

  /** The event types (and schemas) a legacy backend's `records` declare. */
  #declareRecords(backend: LegacyBackend): void {
    for (const records of backend.config.records) {
      for (const type of records.types) this.#learn({ type, backend: backend.id, typed: !!records.schema });
      if (records.schema) for (const type of records.types) this.#schemas.set(keyOf(type), records.schema);
    }
  }

  /** Loads the types seen before a restart and starts learning from new appends. */
  async start(): Promise<void> {
    const saved = await this.#options.log.checkpoint(CHECKPOINT_KEY);
    for (const known of saved ? (JSON.parse(saved) as KnownType[]) : []) this.#learn(known);
    this.#unsubscribe = this.#options.log.subscribe((events) => this.#observe(events));
    // Not awaited: an unreachable backend must not hold the gateway's start (each read has a deadline).
    this.#refresher = new CatalogueRefresher({ backends: this.#options.backends, read: (backend) => this.#readDeclared(backend), forget: () => {} });
    void this.#refresher.start();
  }

  /** Stops learning. Safe to call twice. */
  async close(): Promise<void> {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    await this.#refresher?.close();
    await this.#saving;
  }

  /**
   * The catalogue, optionally of one backend only; `visible` says which types the caller may see
   * (per-caller catalogues: a hidden type is not listed).
   */
  entries(backendId?: string, visible: (known: { type: string; backend: string }) => boolean = () => true): EventCatalogueEntry[] {
    const entries: EventCatalogueEntry[] = [];
    for (const [key, known] of this.#types) {
      if ((backendId !== undefined && known.backend !== backendId) || !visible(known)) continue;
      const { schema, version } = eventSchemaOf(known.type);
      const entry: EventCatalogueEntry = { schema, version, description: `${known.type}, produced by ${known.backend}` };
      if (known.typed) entry.dataschema = `${this.#options.publicUrl}events/${key}`;
      entries.push(entry);
    }
    return entries;
  }

  /** The event types a backend produces, as far as the catalogue knows (the `produces` of its service descriptor). */
  typesOf(backendId: string): string[] {
    return [...this.#types.values()].filter((known) => known.backend === backendId).map((known) => known.type);
  }

  /**
   * The JSON Schema of a typed event's data; throws 404 `UNKNOWN_SCHEMA` (or 503 when its backend is
   * unreachable). A type `visible` hides is unknown, exactly as one never seen.
   */
  async schema(schema: string, version: string, backendId?: string, visible: (known: { type: string; backend: string }) => boolean = () => true): Promise<Record<string, unknown>> {
    const key = `${schema}/${version}`;
    const known = this.#types.get(key);
    if (!known || !known.typed || (backendId !== undefined && known.backend !== backendId) || !visible(known)) throw unknownSchema(key);
    const cached = this.#schemas.get(key);
    if (cached) return cached;
    const backend = this.#options.backends.get(known.backend);
    if (!backend || backend.kind !== 'proto') throw unknownSchema(key);
    const fetched = await fetchSchema(backend, key);
    this.#schemas.set(key, fetched);
    return fetched;
  }

  /**
   * Learns event types a backend declares it produces (the `produces` lists of its command
   * schemas) before any of them is seen in the log. They are listed untyped until an event of the
   * type arrives with a `dataschema`.
   */
  addProduced(backendId: string, types: string[]): void {
    for (const type of types) this.#learn({ type, backend: backendId, typed: false });
  }

  /** Learns the event types a proto backend's own catalogue declares; a failed read changes nothing. */
  async #readDeclared(backend: ProtoBackend): Promise<void> {
    let declared;
    try {
      declared = await readProtoEventCatalogue(backend);
    } catch (err) {
      this.#options.logger.debug({ err, backend: backend.id }, 'could not read the event catalogue of a backend');
      return;
    }
    if (this.#refresher?.closed || this.#options.backends.get(backend.id) === undefined) return;
    let learned = false;
    for (const { type, typed } of declared) learned = this.#learn({ type, backend: backend.id, typed }) || learned;
    if (learned) this.#saving = this.#saving.then(() => this.#save());
  }

  #forget(backendId: string): void {
    for (const [key, known] of this.#types) {
      if (known.backend !== backendId) continue;
      this.#types.delete(key);
      this.#schemas.delete(key);
    }
    this.#saving = this.#saving.then(() => this.#save());
  }

  #observe(events: StoredEvent[]): void {
    let learned = false;
    for (const { backend, event } of events) {
      if (backend === undefined) continue;
      learned = this.#learn({ type: event.type, backend, typed: typeof event.dataschema === 'string' }) || learned;
    }
    if (learned) this.#saving = this.#saving.then(() => this.#save());
  }

  #learn(known: KnownType): boolean {
    const key = keyOf(known.type);
    const existing = this.#types.get(key);
    if (existing) return upgraded(existing, known);
    if (this.#types.size >= MAX_EVENT_TYPES) {
      this.#options.logger.warn({ type: known.type, backend: known.backend }, 'event catalogue is full; type not listed');
      return false;
    }
    this.#types.set(key, known);
    return true;
  }

  async #save(): Promise<void> {
    try {
      await this.#options.log.saveCheckpoint({ key: CHECKPOINT_KEY, value: JSON.stringify([...this.#types.values()]) });
    } catch (err) {
      this.#options.logger.warn({ err }, 'could not save the event catalogue');
    }
  }
}

/** A type first learned untyped (from a `produces` list) becomes typed when its backend sends a typed event. */
function upgraded(existing: KnownType, seen: KnownType): boolean {
  if (existing.typed || !seen.typed || existing.backend !== seen.backend || existing.type !== seen.type) return false;
  existing.typed = true;
  return true;
}

function keyOf(type: string): string {
  const { schema, version } = eventSchemaOf(type);
  return `${schema}/${version}`;
}

async function fetchSchema(backend: Backend & { kind: 'proto' }, key: string): Promise<Record<string, unknown>> {
  const answer = await getJson(joinUrl(backend.endpoint(), `events/${key}`), { headers: backend.config.headers, timeoutMs: SCHEMA_TIMEOUT_MS, dispatcher: backend.connections?.dispatcher });
  if (answer.status === 404) throw unknownSchema(key);
  if (answer.status !== 200 || !answer.body || typeof answer.body !== 'object') {
    throw new ProtoError('BACKEND_UNAVAILABLE', `the backend answered ${answer.status} for the schema ${key}`);
  }
  return rewriteDeep(answer.body as Record<string, unknown>, backend.rewrite);
}

function unknownSchema(key: string): ProtoError {
  return new ProtoError('UNKNOWN_SCHEMA', `no event schema ${key}`, { schema: key });
}
