/**
 * `${VAR}` substitution (DESIGN.md, Loading rules): applied to parsed string values, never to
 * comments or keys; `$${VAR}` stands for a literal `${VAR}`; a variable that is not set is a problem
 * at that value. A plain (unquoted) value that is exactly one `${VAR}` takes the YAML type of what it
 * is replaced with, as if written there (`port: ${PORT}` is a number); quote it to keep a string.
 */
import { isMap, isPair, isScalar, isSeq, parse, type Node, type Scalar } from 'yaml';
import type { ConfigPath } from './problems.ts';
import type { Reporter } from './yaml-source.ts';

const reference = /\$(\$?)\{([^}]*)\}/g;
const variableName = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Replaces `${VAR}` in every string value under `root`, in place; reports unset or malformed names. */
export function substituteEnv(root: Node | null, env: NodeJS.ProcessEnv, report: Reporter): void {
  walk(root, [], (scalar, path) => substituteScalar(scalar, path, env, report));
}

/** `text` with its `${VAR}` references replaced; `missing` receives each unusable name. */
export function expandText(text: string, env: NodeJS.ProcessEnv, missing: (name: string, why: string) => void): string {
  return text.replace(reference, (whole, escape: string, name: string) => {
    if (escape) return whole.slice(1);
    if (!variableName.test(name)) {
      missing(name, `"\${${name}}" is not a valid environment variable reference`);
      return whole;
    }
    const value = env[name];
    if (value === undefined) {
      missing(name, `environment variable ${name} is not set`);
      return whole;
    }
    return value;
  });
}

function substituteScalar(scalar: Scalar, path: ConfigPath, env: NodeJS.ProcessEnv, report: Reporter): void {
  const text = scalar.value;
  if (typeof text !== 'string' || !text.includes('$')) return;
  const expanded = expandText(text, env, (_name, why) => report(path, why));
  scalar.value = scalar.type === 'PLAIN' && /^\$\{[^}]*\}$/.test(text) ? retype(expanded) : expanded;
}

/** The YAML reading of a substituted plain value when it is a number or boolean, else the text. */
function retype(text: string): string | number | boolean {
  try {
    const value: unknown = parse(text);
    return typeof value === 'number' || typeof value === 'boolean' ? value : text;
  } catch {
    return text;
  }
}

function walk(node: unknown, path: ConfigPath, visit: (scalar: Scalar, path: ConfigPath) => void): void {
  if (isScalar(node)) visit(node, path);
  else if (isSeq(node)) node.items.forEach((item, index) => walk(item, [...path, index], visit));
  else if (isMap(node)) {
    for (const pair of node.items) {
      if (isPair(pair) && isScalar(pair.key)) walk(pair.value, [...path, String(pair.key.value)], visit);
    }
  }
}
