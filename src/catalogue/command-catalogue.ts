/**
 * The command catalogue (`GET /commands`, PROTOCOL-NOTES.md, Commands): the legacy backends'
 * configured `commands` and every proto backend's own catalogue, each entry's JSON Schema compiled
 * once when it loads. Proto catalogues are read at start, after every manifest change of their
 * backend, and every `refresh` (`catalogue-refresher.ts`); a failed read keeps the last good copy.
 * A backend registered at runtime is read as it is added; a removed one's entries are dropped.
 *
 * One command type belongs to one backend. Legacy duplicates are refused by the config loader; any
 * other claim of a type (or `schema/version`) already held by a backend earlier in the
 * configuration is ignored, logged once and counted in `proto_gateway_command_type_conflicts`:
 * the first one wins, so routing never depends on which backend answered first.
 */
import type { Logger } from 'pino';
import type { BackendDirectory } from '../backends/directory.ts';
import type { LegacyBackend } from '../backends/legacy-backend.ts';
import type { ProtoBackend } from '../backends/proto-backend.ts';
import { ProtoError } from '../errors.ts';
import { compileTemplate, type CompiledTemplate } from '../mapping/jsonata.ts';
import { commandTypeOf, legacyCommandProduces } from '../mapping/names.ts';
import { renderPath, UnsafePathError } from '../mapping/path-template.ts';
import { CatalogueRefresher } from './catalogue-refresher.ts';
import { readProtoCatalogue, type ProtoCatalogueEntry } from './proto-catalogue-source.ts';
import { SchemaCompiler, type DataProblem, type DataValidator } from './schema-compiler.ts';
import { replaceDeclared } from './declared-entries.ts';

/** A command the gateway accepts, and the backend it goes to. */
export interface CommandEntry {
  /** PascalCase command type (`$pascal(schema)`). */
  type: string;
  schema: string;
  version: string;
  description?: string;
  backend: string;
  kind: 'legacy' | 'proto';
  /** The schema document served at `/commands/{schema}/{version}` (without `$id`; public URLs only). */
  document: Record<string, unknown>;
  /** Event types its processing can produce. */
  produces: string[];
  /** Validates `data`; compiled once. */
  validate: DataValidator;
  /**
   * Legacy only: the problems of the request this command would make (its path template with the
   * command's values), checked at ingestion so an unsafe path is refused before the 201.
   */
  checkRequest?: (command: Record<string, unknown>) => Promise<DataProblem[]>;
  /** Proto only: the backend's own `dataschema` of the command, put on the delivered envelope. */
  backendDataschema?: string;
}

/** Item of `GET /commands` (PROTOCOL-NOTES.md). */
export interface CommandListItem {
  schema: string;
  version: string;
  dataschema: string;
  description?: string;
}

/** What the catalogue reports to the metrics. */
export interface CommandCatalogueMetrics {
  /** Sets how many command types of `backend` are shadowed by an earlier backend. */
  setConflicts(backend: string, count: number): void;
}

/** Options of a `CommandCatalogue`. */
export interface CommandCatalogueOptions {
  publicUrl: string;
  backends: BackendDirectory;
  logger: Logger;
  metrics: CommandCatalogueMetrics;
  /** Told the event types a backend's commands produce, after every load (the event catalogue learns them). */
  onProduced?: (backend: string, types: string[]) => void;
}

/** A compiled entry and how to release its schema from ajv when it is replaced. */
interface Loaded {
  entry: CommandEntry;
  text: string;
  release(): void;
}

export class CommandCatalogue {
  readonly #options: CommandCatalogueOptions;
  readonly #compiler = new SchemaCompiler();
  /** Every backend's own entries, by backend id. */
  readonly #declared = new Map<string, Loaded[]>();
  #byType = new Map<string, CommandEntry>();
  #bySchema = new Map<string, CommandEntry>();
  /** Conflicts already logged, so a refresh does not log them again. */
  #reported = new Set<string>();
  readonly #refresher: CatalogueRefresher;

  constructor(options: CommandCatalogueOptions) {
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

  /** Reads every proto backend's catalogue, then follows manifest changes and `refresh`. */
  start(): Promise<void> {
    return this.#refresher.start();
  }

  /** Stops refreshing. Safe to call twice. */
  close(): Promise<void> {
    return this.#refresher.close();
  }

  /** The entry of a command type, or undefined. */
  byType(type: string): CommandEntry | undefined {
    return this.#byType.get(type);
  }

  /** Every entry (the A2A agent card's skills). */
  entries(): CommandEntry[] {
    return [...this.#byType.values()];
  }

  /** `GET /commands` (of one backend when `backendId` is given). */
  list(backendId?: string, visible: (entry: CommandEntry) => boolean = () => true): CommandListItem[] {
    const items: CommandListItem[] = [];
    for (const entry of this.#byType.values()) {
      if ((backendId !== undefined && entry.backend !== backendId) || !visible(entry)) continue;
      const item: CommandListItem = { schema: entry.schema, version: entry.version, dataschema: this.dataschemaOf(entry, backendId) };
      if (entry.description !== undefined) item.description = entry.description;
      items.push(item);
    }
    return items;
  }

  /** The public URI of an entry's schema: under the root, or under `/services/{id}/` when scoped. */
  dataschemaOf(entry: Pick<CommandEntry, 'schema' | 'version'>, backendId?: string): string {
    const base = backendId === undefined ? this.#options.publicUrl : `${this.#options.publicUrl}services/${backendId}/`;
    return `${base}commands/${entry.schema}/${entry.version}`;
  }

  /** The schema document of `schema/version` with its public `$id`; throws 404 `UNKNOWN_SCHEMA`. */
  schemaDocument(schema: string, version: string, backendId?: string, visible: (entry: CommandEntry) => boolean = () => true): Record<string, unknown> {
    const entry = this.#bySchema.get(`${schema}/${version}`);
    if (!entry || (backendId !== undefined && entry.backend !== backendId) || !visible(entry)) {
      throw new ProtoError('UNKNOWN_SCHEMA', `no command schema ${schema}/${version}`, { schema: `${schema}/${version}` });
    }
    const { $schema, ...rest } = entry.document;
    return { ...($schema === undefined ? {} : { $schema }), $id: this.dataschemaOf(entry, backendId), ...rest };
  }

  /** The command types a backend accepts (the `accepts` of its service descriptor). */
  typesOf(backendId: string): string[] {
    return [...this.#byType.values()].filter((entry) => entry.backend === backendId).map((entry) => entry.type);
  }

  /** Reads one proto backend's catalogue now; concurrent calls share one read. */
  refresh(backend: ProtoBackend): Promise<void> {
    return this.#refresher.refresh(backend);
  }

  async #read(backend: ProtoBackend): Promise<void> {
    const log = this.#options.logger.child({ backend: backend.id });
    try {
      const { entries, skipped } = await readProtoCatalogue(backend, 'commands');
      // Closed, or the backend was removed (or replaced) while the read was under way.
      if (this.#refresher.closed || this.#options.backends.get(backend.id) !== backend) return;
      if (skipped.length > 0) log.warn({ skipped }, 'malformed command catalogue entries ignored');
      this.#replace(backend.id, entries.flatMap((command) => this.#protoEntry(backend, command, log)));
    } catch (err) {
      log.warn({ err: (err as Error).message }, 'command catalogue unavailable; keeping the last good copy');
    }
  }

  #legacyEntries(backend: LegacyBackend): Loaded[] {
    return backend.config.commands.map((command) => {
      const produces = legacyCommandProduces(command);
      const document = { ...command.jsonSchema, ...(command.description && { description: command.description }), produces };
      const { validator, release } = this.#compiler.compile(command.jsonSchema);
      const entry: CommandEntry = {
        type: command.type, schema: command.schema, version: command.version, backend: backend.id, kind: 'legacy',
        document, produces, validate: validator, checkRequest: requestCheck(compileTemplate(command.request.path)),
        ...(command.description !== undefined && { description: command.description }),
      };
      return { entry, text: JSON.stringify(document), release };
    });
  }

  #protoEntry(backend: ProtoBackend, command: ProtoCatalogueEntry, log: Logger): Loaded[] {
    const text = JSON.stringify(command.document);
    const type = commandTypeOf(command.schema);
    const previous = this.#declared.get(backend.id)?.find((loaded) => loaded.entry.type === type && loaded.text === text);
    const produced = Array.isArray(command.document.produces) ? command.document.produces.filter((t): t is string => typeof t === 'string') : [];
    const produces = [...new Set([...produced, `${type}FailedV1`])];
    const base = { type, schema: command.schema, version: command.version, backend: backend.id, kind: 'proto' as const, document: command.document, produces, backendDataschema: command.dataschema };
    const described = command.description ?? (typeof command.document.description === 'string' ? command.document.description : undefined);
    if (previous) return [{ ...previous, entry: { ...base, validate: previous.entry.validate, ...(described !== undefined && { description: described }) } }];
    try {
      const { validator, release } = this.#compiler.compile(command.document);
      return [{ entry: { ...base, validate: validator, ...(described !== undefined && { description: described }) }, text, release }];
    } catch (err) {
      log.warn({ schema: `${command.schema}/${command.version}`, err: (err as Error).message }, 'command schema does not compile; command ignored');
      return [];
    }
  }

  /** Installs a backend's new entries, releases the schemas no longer used, rebuilds the index. */
  #replace(backendId: string, loaded: Loaded[]): void {
    replaceDeclared(this.#declared, backendId, loaded, this.#options.backends.get(backendId) !== undefined);
    this.#rebuild();
  }

  /** The type and schema indexes, in configuration order: a type already taken is a conflict. */
  #rebuild(): void {
    const byType = new Map<string, CommandEntry>();
    const bySchema = new Map<string, CommandEntry>();
    for (const backend of this.#options.backends.list()) {
      const entries = (this.#declared.get(backend.id) ?? []).map((loaded) => loaded.entry);
      let conflicts = 0;
      for (const entry of entries) {
        const key = `${entry.schema}/${entry.version}`;
        const holder = byType.get(entry.type) ?? bySchema.get(key);
        if (holder) {
          conflicts++;
          this.#reportConflict(entry, holder);
          continue;
        }
        byType.set(entry.type, entry);
        bySchema.set(key, entry);
      }
      this.#options.metrics.setConflicts(backend.id, conflicts);
      this.#options.onProduced?.(backend.id, [...new Set(entries.flatMap((entry) => entry.produces))]);
    }
    this.#byType = byType;
    this.#bySchema = bySchema;
  }

  #reportConflict(entry: CommandEntry, holder: CommandEntry): void {
    const key = `${entry.backend}\n${entry.type}\n${holder.backend}`;
    if (this.#reported.has(key)) return;
    this.#reported.add(key);
    this.#options.logger.warn(
      { type: entry.type, schema: `${entry.schema}/${entry.version}`, backend: entry.backend, owner: holder.backend },
      'command type already claimed by an earlier backend; ignored',
    );
  }
}

/**
 * The request check of a legacy command: its path rendered with the command's values must stay
 * inside what the configuration wrote (no empty, `.` or `..` segment). A placeholder that yields
 * nothing is left to delivery (it may read attributes the outbox adds).
 */
function requestCheck(path: CompiledTemplate): (command: Record<string, unknown>) => Promise<DataProblem[]> {
  return async (command) => {
    try {
      await renderPath(path, { command, data: command.data });
      return [];
    } catch (err) {
      return err instanceof UnsafePathError ? [{ path: '', message: err.message }] : [];
    }
  };
}
