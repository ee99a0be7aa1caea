/**
 * A parsed YAML config file that remembers where every value came from, so that a problem found
 * in the parsed data (by path) is reported at its line and column in the file.
 */
import { isMap, isPair, isScalar, isSeq, LineCounter, parseDocument, type Document, type Node, type Pair } from 'yaml';
import { formatPath, type ConfigPath, type ConfigProblem } from './problems.ts';

/** Where on a path's node a problem points: its key (unknown keys) or its value (the default). */
export interface ProblemSite {
  at?: 'key' | 'value';
  /** 0-based offset into a one-line scalar value (e.g. the position of a JSONata syntax error). */
  offset?: number;
}

/** Reports a problem at a path of the config; the message is prefixed with the dotted path. */
export type Reporter = (path: ConfigPath, message: string, site?: ProblemSite) => void;

/** A YAML config file: its document, positions, and the problems collected so far. */
export class ConfigSource {
  readonly file: string;
  readonly document: Document.Parsed;
  readonly problems: ConfigProblem[] = [];
  private readonly lines: LineCounter;

  private constructor(file: string, document: Document.Parsed, lines: LineCounter) {
    this.file = file;
    this.document = document;
    this.lines = lines;
  }

  /** Parses `text`; YAML syntax errors become problems at their position. */
  static parse(file: string, text: string): ConfigSource {
    const lines = new LineCounter();
    const document = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true });
    const source = new ConfigSource(file, document, lines);
    for (const error of document.errors) source.problemAtOffset(error.pos[0], firstLine(error.message));
    return source;
  }

  /** The parsed data as plain JavaScript values. */
  data(): unknown {
    return this.document.toJS({ maxAliasCount: 100 });
  }

  /** A `Reporter` bound to this file. */
  readonly report: Reporter = (path, message, site = {}) => {
    this.problemAtOffset(this.offsetOf(path, site), `${formatPath(path)}: ${message}`);
  };

  /** Records a problem at a character offset of the file. */
  problemAtOffset(offset: number, message: string): void {
    const { line, col } = this.lines.linePos(offset);
    // One problem is one line of `validate`'s output, whatever the message quotes.
    this.problems.push({ file: this.file, line, column: col, message: message.replace(/\s*\n\s*/g, ' ').trim() });
  }

  /** Offset of the node at `path` (or of its deepest existing ancestor). */
  private offsetOf(path: ConfigPath, site: ProblemSite): number {
    const { node, pair } = locate(this.document.contents, path);
    if (site.at === 'key' && pair && isScalar(pair.key) && pair.key.range) return pair.key.range[0];
    const range = node?.range;
    if (!range) return pair && isScalar(pair.key) && pair.key.range ? pair.key.range[0] : 0;
    if (site.offset !== undefined && isScalar(node) && this.oneLine(range)) {
      return range[0] + site.offset + (node.type === 'PLAIN' ? 0 : 1);
    }
    return range[0];
  }

  private oneLine(range: [number, number, number]): boolean {
    return this.lines.linePos(range[0]).line === this.lines.linePos(Math.max(range[0], range[1] - 1)).line;
  }
}

/** Follows `path` through maps and sequences; returns the deepest node found and the pair holding it. */
function locate(root: Node | null, path: ConfigPath): { node: Node | null; pair?: Pair } {
  let node = root;
  let pair: Pair | undefined;
  for (const segment of path) {
    if (isMap(node)) {
      const found = node.items.find((item) => isPair(item) && isScalar(item.key) && String(item.key.value) === String(segment));
      if (!found) break;
      pair = found as Pair;
      node = (found.value as Node | null) ?? null;
      if (!node) break;
    } else if (isSeq(node) && typeof segment === 'number' && segment < node.items.length) {
      node = node.items[segment] as Node;
      pair = undefined;
    } else break;
  }
  return { node, pair };
}

function firstLine(message: string): string {
  return message.split('\n')[0];
}
