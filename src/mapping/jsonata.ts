/**
 * JSONata mapping fields of the configuration (DESIGN.md, "Mapping fields are JSONata"), compiled
 * once at load time. Two forms: an *expression* is one JSONata expression; a *template* is literal
 * text with `{expression}` placeholders. `$pascal` and `$kebab` are available in both.
 */
import jsonata from 'jsonata';
import { kebab, pascal } from './names.ts';

/** A mapping field that does not compile or does not evaluate. `position` is a 0-based offset in its source. */
export class MappingError extends Error {
  readonly position?: number;
  constructor(message: string, position?: number) {
    super(message);
    this.name = 'MappingError';
    this.position = position;
  }
}

/** A compiled JSONata expression. */
export interface CompiledExpression {
  readonly source: string;
  evaluate(input: unknown): Promise<unknown>;
}

/** How placeholder values are written into a template's text. */
export interface RenderOptions {
  /** Applied to each placeholder's value (not to the literal text): `encodeURIComponent` for URL paths. */
  encode?: (value: string) => string;
}

/** A compiled template. `render` fails when a placeholder yields nothing. */
export interface CompiledTemplate {
  readonly source: string;
  render(input: unknown, options?: RenderOptions): Promise<string>;
}

/**
 * Options for templates that become URL paths: every placeholder value is one encoded segment
 * part, so a value such as `../../admin?x=1` cannot leave the path the configuration wrote.
 */
export const URL_PATH: RenderOptions = { encode: encodeURIComponent };

/** Compiles one JSONata expression; throws `MappingError` with the offset of the problem. */
export function compileExpression(source: string): CompiledExpression {
  const expression = parse(source, 0);
  return {
    source,
    async evaluate(input) {
      try {
        return await expression.evaluate(input);
      } catch (err) {
        throw new MappingError(`${describe(err)} in "${source}"`, (err as { position?: number }).position);
      }
    },
  };
}

/** Compiles a template such as `Order{$pascal(status)}V1`; throws `MappingError` on a bad placeholder. */
export function compileTemplate(source: string): CompiledTemplate {
  const parts = splitTemplate(source).map((part) =>
    typeof part === 'string' ? part : { text: part.text, expression: parse(part.text, part.offset) },
  );
  return {
    source,
    async render(input, options = {}) {
      const encode = options.encode ?? ((value: string) => value);
      let out = '';
      for (const part of parts) {
        if (typeof part === 'string') {
          out += part;
          continue;
        }
        const value = await part.expression.evaluate(input).catch((err: unknown) => {
          throw new MappingError(`${describe(err)} in "{${part.text}}" of template "${source}"`);
        });
        if (value === undefined || value === null) {
          throw new MappingError(`placeholder {${part.text}} of template "${source}" yields nothing`);
        }
        out += encode(typeof value === 'object' ? JSON.stringify(value) : String(value));
      }
      return out;
    },
  };
}

type TemplatePart = string | { text: string; offset: number };

/** Splits literal text and `{…}` placeholders, honouring nested braces and quoted strings inside them. */
function splitTemplate(source: string): TemplatePart[] {
  const parts: TemplatePart[] = [];
  let literal = '';
  for (let i = 0; i < source.length; i++) {
    if (source[i] === '}') throw new MappingError(`unmatched "}" in template "${source}"`, i);
    if (source[i] !== '{') {
      literal += source[i];
      continue;
    }
    const end = placeholderEnd(source, i);
    if (literal) parts.push(literal);
    literal = '';
    const text = source.slice(i + 1, end);
    if (!text.trim()) throw new MappingError(`empty placeholder in template "${source}"`, i);
    parts.push({ text, offset: i + 1 });
    i = end;
  }
  if (literal) parts.push(literal);
  return parts;
}

/** Index of the `}` closing the placeholder opened at `start`. */
function placeholderEnd(source: string, start: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = start; i < source.length; i++) {
    const c = source[i];
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'" || c === '`') quote = c;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  throw new MappingError(`unclosed "{" in template "${source}"`, start);
}

function parse(text: string, offset: number): jsonata.Expression {
  let expression: jsonata.Expression;
  try {
    expression = jsonata(text);
  } catch (err) {
    const position = (err as { position?: number }).position;
    throw new MappingError(`${describe(err)} in "${text}"`, position === undefined ? offset : offset + position);
  }
  expression.registerFunction('pascal', (value: unknown) => (value === undefined ? undefined : pascal(String(value))), '<x-:s>');
  expression.registerFunction('kebab', (value: unknown) => (value === undefined ? undefined : kebab(String(value))), '<x-:s>');
  return expression;
}

function describe(err: unknown): string {
  const e = err as { message?: string; code?: string };
  return e.code ? `${e.code}: ${e.message}` : String(e.message ?? err);
}
