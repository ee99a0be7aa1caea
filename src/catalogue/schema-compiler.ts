/**
 * Compiles the JSON Schemas of command data and query parameters once, when a catalogue loads
 * (STYLE.md rule 3): draft 2020-12 unless `$schema` names draft-04…07; every error reported
 * (`allErrors`), formats checked (ajv-formats), unknown keywords tolerated (backends' schemas carry
 * annotations such as `produces`). Command `data` is never modified (no defaults filled in): what
 * is delivered is what was sent. Query parameters arrive as strings, so a compiler made with
 * `coerceTypes` converts them in place to the types their schema names (and a lone value to a
 * one-item array, ajv's `coerceTypes: 'array'`).
 */
import { Ajv, type AnySchema, type ErrorObject, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { withFormats } from '../config/ajv-formats.ts';

/** One validation problem of `data`: `path` is a JSON Pointer into `data` (`""` = `data` itself). */
export interface DataProblem {
  path: string;
  message: string;
}

/** A compiled schema: the problems of a value (empty when valid). */
export type DataValidator = (data: unknown) => DataProblem[];

/** At most this many problems are reported for one value. */
export const MAX_REPORTED_PROBLEMS = 50;

/** Options of a `SchemaCompiler`. */
export interface SchemaCompilerOptions {
  /** Converts values in place to the types of their schema (query strings); default false. */
  coerceTypes?: boolean;
}

/** Compiles schemas with two ajv instances (2020-12, draft-07) shared by every schema of the catalogue. */
export class SchemaCompiler {
  readonly #modern: Ajv2020;
  readonly #draft07: Ajv;

  constructor(options: SchemaCompilerOptions = {}) {
    const settings = { strict: false, allErrors: true, ...(options.coerceTypes && { coerceTypes: 'array' as const }) };
    this.#modern = withFormats(new Ajv2020(settings));
    this.#draft07 = withFormats(new Ajv(settings));
  }

  /**
   * Compiles `schema` (its own `$id` is ignored, so a refreshed schema may be compiled again);
   * throws the ajv error when it is not a usable JSON Schema.
   */
  compile(schema: Record<string, unknown>): { validator: DataValidator; release(): void } {
    const { $id: _ignored, ...anonymous } = schema;
    const ajv = /draft-0[4-7]/.test(String(schema.$schema ?? '')) ? this.#draft07 : this.#modern;
    const validate = ajv.compile(anonymous as AnySchema);
    return { validator: (data) => problemsOf(validate, data), release: () => void ajv.removeSchema(anonymous as AnySchema) };
  }
}

function problemsOf(validate: ValidateFunction, data: unknown): DataProblem[] {
  if (validate(data)) return [];
  return (validate.errors ?? []).slice(0, MAX_REPORTED_PROBLEMS).map(problemOf);
}

/** An ajv error as a problem; `required` and `additionalProperties` point at the property itself. */
function problemOf(error: ErrorObject): DataProblem {
  const params = error.params as { missingProperty?: string; additionalProperty?: string };
  const property = error.keyword === 'required' ? params.missingProperty : error.keyword === 'additionalProperties' ? params.additionalProperty : undefined;
  const path = property === undefined ? error.instancePath : `${error.instancePath}/${escapePointer(property)}`;
  return { path, message: error.message ?? 'is invalid' };
}

/** RFC 6901 §3: `~` → `~0`, `/` → `~1`. */
function escapePointer(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** The longest refusal message `describeProblems` builds, in characters (a longer one ends with "…"). */
export const MAX_PROBLEM_MESSAGE_LENGTH = 500;

/**
 * A refusal message that names each problem (`data is not a valid PlaceOrder: /sku must NOT have
 * fewer than 1 characters; /qty must be >= 1`), for clients that surface only `error.message` (MCP
 * clients, LLM agents). At most `MAX_PROBLEM_MESSAGE_LENGTH` characters; `details.errors` keeps the
 * full list.
 */
export function describeProblems(prefix: string, problems: DataProblem[]): string {
  const listed = problems.map((p) => (p.path === '' ? p.message : `${p.path} ${p.message}`)).join('; ');
  const message = listed === '' ? prefix : `${prefix}: ${listed}`;
  return message.length <= MAX_PROBLEM_MESSAGE_LENGTH ? message : `${message.slice(0, MAX_PROBLEM_MESSAGE_LENGTH - 1)}…`;
}
