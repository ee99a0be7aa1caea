/**
 * Validation of a parsed config against the JSON Schema of the whole configuration contract,
 * assembled from the sections' pieces (`config-schema.ts`; the same document as
 * `config/gateway.schema.json`). Every ajv error becomes a problem at the YAML position of the value
 * (or, for an unknown key, of the key) with the dotted path in its message.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import { withFormats } from './ajv-formats.ts';
import { assembleConfigSchema } from './config-schema.ts';
import type { ConfigPath } from './problems.ts';
import type { ConfigSections } from './section.ts';
import type { Reporter } from './yaml-source.ts';

/** Keyword of the config schema carrying a readable message for a failed `oneOf`. */
const messageKeyword = 'x-message';
/** Keyword of the config schema explaining why a required key is required (by key), appended to "missing required key". */
const requiredWhyKeyword = 'x-required-why';

/** The compiled schema of each list of sections (compiled once per process). */
const compiled = new WeakMap<ConfigSections, ValidateFunction>();

/** Validates `data` against the schema of `sections`, reporting every error; true when there were none. */
export function checkAgainstSchema(data: unknown, report: Reporter, sections: ConfigSections): boolean {
  const validate = configValidator(sections);
  if (validate(data)) return true;
  for (const error of relevantErrors(validate.errors ?? [])) reportError(error, report);
  return false;
}

/** The compiled config schema of `sections`. */
export function configValidator(sections: ConfigSections): ValidateFunction {
  const known = compiled.get(sections);
  if (known) return known;
  const ajv = withFormats(new Ajv({ allErrors: true, verbose: true, strict: true, strictRequired: false, allowUnionTypes: true }));
  ajv.addKeyword(messageKeyword);
  ajv.addKeyword(requiredWhyKeyword);
  const validate = ajv.compile(assembleConfigSchema(sections));
  compiled.set(sections, validate);
  return validate;
}

/**
 * Drops the noise: errors inside conditional and alternative branches (the branch errors stand for
 * themselves), and a second complaint about the same value (a bad URL fails both format and pattern).
 */
function relevantErrors(errors: ErrorObject[]): ErrorObject[] {
  const seen = new Set<string>();
  return errors.filter((error) => {
    if (error.keyword === 'if' || /\/oneOf\/\d+\//.test(error.schemaPath)) return false;
    const distinct = error.keyword === 'additionalProperties' || error.keyword === 'required';
    const key = `${error.instancePath} ${distinct ? JSON.stringify(error.params) : ''}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function reportError(error: ErrorObject, report: Reporter): void {
  const path = pointerToPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'additionalProperties':
      return report([...path, String(params.additionalProperty)], 'unknown key', { at: 'key' });
    case 'required': {
      const why = ((error.parentSchema as Record<string, unknown> | undefined)?.[requiredWhyKeyword] as Record<string, string> | undefined)?.[String(params.missingProperty)];
      return report(path, `missing required key "${String(params.missingProperty)}"${why ? `: ${why}` : ''}`);
    }
    case 'oneOf': {
      const custom = (error.parentSchema as Record<string, unknown> | undefined)?.[messageKeyword];
      return report(path, typeof custom === 'string' ? custom : String(error.message));
    }
    case 'pattern':
      return report(path, `${JSON.stringify(error.data)} ${patternMessage(error)}`);
    case 'type':
      return report(path, `must be ${String(params.type).replace(/,/g, ' or ')}, not ${kindOf(error.data)}`);
    case 'enum':
      return report(path, `must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`);
    default:
      return report(path, String(error.message));
  }
}

/** What the shared definitions of the schema expect, by definition name. */
const patternMessages: Record<string, string> = {
  httpUrl: 'is not an absolute http(s) URL',
  redisUrl: 'is not a redis:// or rediss:// URL',
  duration: 'is not a duration (e.g. 500ms, 5s, 10m, 2h, 30d)',
  size: 'is not a size (e.g. 10b, 512kb, 1mb; binary units)',
  semver: 'is not a semver version (MAJOR.MINOR.PATCH)',
  backendId: 'is not a backend id ([a-z][a-z0-9-]*)',
  pascalName: 'is not a PascalCase name',
  kebabName: 'is not a kebab-case name',
};

/** A readable pattern failure: durations, sizes and names say what they expect. */
function patternMessage(error: ErrorObject): string {
  const definition = /^#\/definitions\/([^/]+)\/pattern$/.exec(error.schemaPath)?.[1];
  return (definition && patternMessages[definition]) || String(error.message);
}

/** How a value that has the wrong type is named in a message. */
function kindOf(value: unknown): string {
  if (value === null) return 'empty';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `${typeof value} ${JSON.stringify(value)}`;
}

/** `/backends/0/url` → `['backends', 0, 'url']` (RFC 6901 unescaping). */
function pointerToPath(pointer: string): ConfigPath {
  if (!pointer) return [];
  return pointer
    .slice(1)
    .split('/')
    .map((token) => token.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((token) => (/^\d+$/.test(token) ? Number(token) : token));
}
