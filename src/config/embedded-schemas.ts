/**
 * The JSON Schemas a config embeds or names (a command's `jsonSchema` or `schemaFile`, a query's
 * `parameters` and `response`, a record list's `schema` file): files are read relative to the config
 * file and every schema is compiled once with ajv, so a broken one is a problem at its key.
 */
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Ajv, type AnySchema } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { withFormats } from './ajv-formats.ts';
import { formatPath, type ConfigPath } from './problems.ts';
import { asMap, asText, entries, legacyBackends, type RawMap } from './raw.ts';
import type { Reporter } from './yaml-source.ts';

/** A JSON Schema read from a file named by the config. */
export interface SchemaFile {
  /** Absolute path of the file. */
  file: string;
  schema: Record<string, unknown>;
}

/** Schema files read, by the dotted config path of the key naming them (`backends[0].records[1].schema`). */
export type SchemaFiles = Map<string, SchemaFile>;

/** Compiles a JSON Schema; returns the reason it is not usable, or undefined. */
type SchemaCompiler = (schema: unknown) => string | undefined;

/** What the walk over the backends needs: where files are, a compiler, the reporter, the files read. */
interface Walk {
  baseDir: string;
  compile: SchemaCompiler;
  report: Reporter;
  files: SchemaFiles;
}

/** Reads and compiles every embedded or referenced schema of the legacy backends. */
export async function loadEmbeddedSchemas(config: RawMap, baseDir: string, report: Reporter): Promise<SchemaFiles> {
  const walk: Walk = { baseDir, compile: schemaCompiler(), report, files: new Map() };
  for (const [b, backend] of legacyBackends(config)) {
    for (const [i, command] of entries(backend.commands)) {
      const path = ['backends', b, 'commands', i];
      if (command.jsonSchema !== undefined) check(walk, [...path, 'jsonSchema'], command.jsonSchema);
      await readAndCheck(walk, [...path, 'schemaFile'], command.schemaFile);
    }
    for (const [i, query] of entries(backend.queries)) {
      for (const key of ['parameters', 'response']) {
        if (query[key] !== undefined) check(walk, ['backends', b, 'queries', i, key], query[key]);
      }
    }
    for (const [i, records] of entries(backend.records)) {
      await readAndCheck(walk, ['backends', b, 'records', i, 'schema'], records.schema);
    }
  }
  return walk.files;
}

function check(walk: Walk, path: ConfigPath, schema: unknown): void {
  const reason = walk.compile(schema);
  if (reason) walk.report(path, `invalid JSON Schema: ${reason}`);
}

/** Reads the schema file named at `path` (when it names one), keeps it, and compiles it. */
async function readAndCheck(walk: Walk, path: ConfigPath, name: unknown): Promise<void> {
  if (typeof name !== 'string') return;
  const loaded = await readSchemaFile(resolve(walk.baseDir, name), path, walk.report);
  if (!loaded) return;
  walk.files.set(formatPath(path), loaded);
  check(walk, path, loaded.schema);
}

/** Reads and parses one schema file; a missing file or bad JSON is a problem at `path`. */
async function readSchemaFile(file: string, path: ConfigPath, report: Reporter): Promise<SchemaFile | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    report(path, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
    return undefined;
  }
  try {
    const schema: unknown = JSON.parse(text);
    if (schema !== null && typeof schema === 'object' && !Array.isArray(schema)) return { file, schema: schema as Record<string, unknown> };
    report(path, `${file} does not hold a JSON Schema object`);
  } catch (err) {
    report(path, `${file} is not valid JSON: ${(err as Error).message}`);
  }
  return undefined;
}

/**
 * A compiler for user schemas: draft 2020-12 unless `$schema` names draft-07. Not strict, since
 * user schemas may carry annotations ajv does not know; each schema is removed after compiling
 * so two of them may share an `$id`.
 */
function schemaCompiler(): SchemaCompiler {
  const modern = withFormats(new Ajv2020({ strict: false }));
  const draft07 = withFormats(new Ajv({ strict: false }));
  return (schema) => {
    if (typeof schema !== 'boolean' && (schema === null || typeof schema !== 'object' || Array.isArray(schema))) {
      return 'a JSON Schema is an object or a boolean';
    }
    const ajv = /draft-0[4-7]/.test(asText(asMap(schema).$schema) ?? '') ? draft07 : modern;
    try {
      ajv.compile(schema as AnySchema);
      return undefined;
    } catch (err) {
      return (err as Error).message;
    } finally {
      ajv.removeSchema(schema as AnySchema);
    }
  };
}
