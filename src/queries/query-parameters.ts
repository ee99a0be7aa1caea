/**
 * The parameters of `GET /queries/{schema}?…` (PROTOCOL-NOTES.md, Queries): the query string as an
 * object (a repeated parameter becomes an array), checked and coerced against the query's
 * `parameters` schema (compiled with coercion: `"5"` satisfies `integer` and becomes `5`, a lone
 * value satisfies `array`). Any problem is a 400 `INVALID_PARAMETER` with
 * `details.errors: [{ path, message }]` (JSON Pointers into the parameters object).
 */
import type { QueryEntry } from '../catalogue/query-catalogue.ts';
import { describeProblems } from '../catalogue/schema-compiler.ts';
import { ProtoError } from '../errors.ts';

/** Parameters in one query string at most (a longer one is refused). */
export const MAX_PARAMETERS = 100;

/** The query string as an object, without the `omit` parameter (the caller's key, when it travels there). */
export function parametersOf(query: URLSearchParams, omit?: string): Record<string, unknown> {
  const params: Record<string, unknown> = {};
  const names = new Set([...query.keys()].filter((name) => name !== omit));
  if (names.size > MAX_PARAMETERS) throw new ProtoError('INVALID_PARAMETER', `at most ${MAX_PARAMETERS} distinct parameters are accepted`, { limit: MAX_PARAMETERS });
  for (const name of names) {
    const values = query.getAll(name);
    params[name] = values.length === 1 ? values[0] : values;
  }
  return params;
}

/** Checks `params` against the entry's `parameters` (coercing them in place); throws `INVALID_PARAMETER`. */
export function checkParameters(entry: QueryEntry, params: Record<string, unknown>): void {
  const errors = entry.validate?.(params) ?? [];
  if (errors.length === 0) return;
  throw new ProtoError('INVALID_PARAMETER', describeProblems(`the parameters of query ${entry.schema} are not valid`, errors), { errors });
}

/** The query string of the `query` expression's result: arrays repeat, objects become JSON, null and undefined are left out. */
export function queryString(value: unknown): string {
  if (value === undefined || value === null || typeof value !== 'object' || Array.isArray(value)) return '';
  const search = new URLSearchParams();
  for (const [name, item] of Object.entries(value)) {
    for (const one of Array.isArray(item) ? item : [item]) {
      if (one === undefined || one === null) continue;
      search.append(name, typeof one === 'object' ? JSON.stringify(one) : String(one));
    }
  }
  return search.size > 0 ? `?${search}` : '';
}
