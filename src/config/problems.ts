/**
 * Problems found in a configuration file, each at a 1-based line and column, and the error that
 * carries all of them at once (a config is refused as a whole, never started half-working).
 */

/** One problem in a config file; `line` and `column` are 1-based. */
export interface ConfigProblem {
  file: string;
  line: number;
  column: number;
  message: string;
}

/** A configuration that cannot be used; `problems` lists every problem found, in file order. */
export class ConfigError extends Error {
  readonly problems: ConfigProblem[];

  constructor(problems: ConfigProblem[]) {
    super(`invalid configuration:\n${formatProblems(problems)}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** One `file:line:col: message` line per problem (the output of `proto-gateway validate`). */
export function formatProblems(problems: ConfigProblem[]): string {
  return problems.map((p) => `${p.file}:${p.line}:${p.column}: ${p.message}`).join('\n');
}

/** A path into the parsed config: keys and array indexes. */
export type ConfigPath = readonly (string | number)[];

/** `['backends', 0, 'url']` → `backends[0].url`; the root is `(root)`. */
export function formatPath(path: ConfigPath): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else out += out ? `.${segment}` : segment;
  }
  return out || '(root)';
}

/** Sorts problems by position, keeping the order of problems found at the same place. */
export function sortProblems(problems: ConfigProblem[]): ConfigProblem[] {
  return [...problems].sort((a, b) => a.line - b.line || a.column - b.column);
}
