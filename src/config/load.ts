/**
 * Loading a config file (DESIGN.md, Loading rules): YAML → `${VAR}` substitution → the JSON Schema
 * of the contract → semantic checks, JSONata mappings and embedded JSON Schemas compiled → defaults.
 * Every problem found on the way is collected and reported at once, each at its line and column;
 * a config with any problem is refused as a whole, so a gateway never starts half-working.
 */
import { readFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import type { GatewayConfig } from './types.ts';
import { applyDefaults } from './defaults.ts';
import { loadEmbeddedSchemas } from './embedded-schemas.ts';
import { substituteEnv } from './env.ts';
import { ConfigError, sortProblems } from './problems.ts';
import { asMap } from './raw.ts';
import { checkAgainstSchema } from './schema-check.ts';
import type { ConfigSections } from './section.ts';
import { checkSectionFiles, checkSemantics } from './semantic-checks.ts';
import { ConfigSource } from './yaml-source.ts';

export { ConfigError, formatProblems, type ConfigProblem } from './problems.ts';
export { parseDuration, parseSize } from './duration.ts';

/**
 * Reads, checks and normalises the config at `file` (relative to the working directory), made of
 * `sections` (the features' config sections, assembled in `src/gateway-config.ts`).
 * Rejects with `ConfigError` listing every problem, sorted by position; a file that cannot be read
 * at all rejects with the file system error itself (`code: 'ENOENT'`…), which the CLI tells apart.
 */
export async function loadConfigOf(sections: ConfigSections, file: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  const text = await readFile(resolve(file), 'utf8');
  return parseConfigOf(sections, text, file, env);
}

/** Checks and normalises config `text` of `sections` as if read from `file` (where relative paths point); see `loadConfigOf`. */
export async function parseConfigOf(sections: ConfigSections, text: string, file: string, env: NodeJS.ProcessEnv = process.env): Promise<GatewayConfig> {
  file = resolve(file);
  const source = ConfigSource.parse(file, text);
  // The document of a YAML syntax error is unreliable: anything found beyond it would be noise.
  if (source.problems.length > 0) throw new ConfigError(source.problems);
  substituteEnv(source.document.contents, env, source.report);
  const data = source.data() ?? {};
  const raw = asMap(data);
  checkAgainstSchema(data, source.report, sections);
  checkSemantics(raw, source.report, sections);
  const schemaFiles = await loadEmbeddedSchemas(raw, dirname(file), source.report);
  await checkSectionFiles(raw, dirname(file), source.report, sections);
  if (source.problems.length > 0) throw new ConfigError(sortProblems(source.problems));
  return applyDefaults(raw, file, schemaFiles, sections);
}
