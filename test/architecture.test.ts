/**
 * The import rules of `src/` (README, Code map), read from the code itself: every `import`/`export
 * ... from` and dynamic `import()` of a relative path in `src/**.ts` is an edge between two files,
 * and each rule lists the edges that break it. A rule with no exception left is checked whole; the
 * test also proves the reader sees the graph (a broken rule would be found).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, posix, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** One import: `from` imports `to`, both paths relative to `src/` with `/` separators. */
interface Edge {
  from: string;
  to: string;
}

/** Every `.ts` file under `dir`, relative to `src/`. */
function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path).split(sep).join('/')] : [];
  });
}

/** The relative specifiers a file imports or re-exports (static, side-effect and dynamic). */
export function importedSpecifiers(text: string): string[] {
  const patterns = [/\bfrom\s*['"]([^'"]+)['"]/g, /\bimport\s*['"]([^'"]+)['"]/g, /\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g];
  return patterns.flatMap((pattern) => [...text.matchAll(pattern)].map((match) => match[1]!)).filter((spec) => spec.startsWith('.'));
}

/** The import graph of `src/`: one edge per relative import. */
function importGraph(): Edge[] {
  return sourceFiles().flatMap((from) => {
    const text = readFileSync(join(SRC, from), 'utf8');
    return importedSpecifiers(text).map((spec) => ({ from, to: posix.normalize(posix.join(posix.dirname(from), spec)) }));
  });
}

/** The top folder of a file (`bridges/sse` for bridges, `app.ts`-style names for root files). */
function area(file: string): string {
  const parts = file.split('/');
  if (parts[0] === 'bridges') return `bridges/${parts[1]}`;
  return parts.length > 1 ? parts[0]! : file;
}

const inside = (...areas: string[]) => (file: string) => areas.some((a) => file === a || file.startsWith(`${a}/`));

/** Protocol core: catalogues, the command pipeline, the log contract, mapping, the manifest, queries. */
const CORE = inside('catalogue', 'commands', 'log', 'mapping', 'manifest', 'queries');
/** Transports: the HTTP layer, the push bridges, the console's routes. */
const TRANSPORT = inside('http', 'bridges', 'console');
/** The shared pieces every bridge may use. */
const SHARED_BRIDGE_PIECES = inside('bridges/live-tail');
/** What `egress/` may import besides itself: the error catalogue, config types, the Retry-After parser. */
const EGRESS_MAY_IMPORT = inside('egress', 'errors.ts', 'config/types.ts', 'retry-after.ts');
/** Features: everything wired by app.ts. `config/` may import itself, the error catalogue and the mapping library it checks expressions with. */
const CONFIG_MAY_IMPORT = inside('config', 'errors.ts', 'mapping');

interface Rule {
  name: string;
  broken(edge: Edge): boolean;
  /** Edges that still break the rule, each to be removed (listed, so a new one fails and a fixed one must be struck off). */
  known?: string[];
}

const RULES: Rule[] = [
  { name: 'protocol core imports no transport', broken: (e) => CORE(e.from) && TRANSPORT(e.to) },
  {
    name: 'no bridge imports another bridge (live-tail is shared)',
    broken: (e) => e.from.startsWith('bridges/') && e.to.startsWith('bridges/') && area(e.from) !== area(e.to) && !SHARED_BRIDGE_PIECES(e.to),
  },
  { name: 'egress imports nothing but errors, config types and the Retry-After parser', broken: (e) => inside('egress')(e.from) && !EGRESS_MAY_IMPORT(e.to) },
  { name: 'config imports no feature', broken: (e) => inside('config')(e.from) && !CONFIG_MAY_IMPORT(e.to) },
  { name: 'metrics import no bridge', broken: (e) => inside('metrics')(e.from) && inside('bridges')(e.to) },
  { name: 'only main.ts imports app.ts; nothing imports main.ts', broken: (e) => (e.to === 'app.ts' && e.from !== 'main.ts') || e.to === 'main.ts' },
];

describe('the import graph of src/', () => {
  const graph = importGraph();

  it('is read from the code: every edge points at a file that exists', () => {
    const files = new Set(sourceFiles());
    expect(graph.length).toBeGreaterThan(300);
    expect(graph.filter((e) => !files.has(e.to))).toEqual([]);
    // The reader sees an import a rule forbids (so an empty list below means the rule holds).
    expect(graph).toContainEqual({ from: 'app.ts', to: 'bridges/sse/create-sse.ts' });
  });

  it('reads static, re-export, side-effect and dynamic imports', () => {
    const text = `import a from './a.ts';\nimport type { B } from "../b.ts";\nexport { c } from './c.ts';\nimport './d.ts';\nconst e = await import('./e.ts');\nimport x from 'node:fs';`;
    expect(importedSpecifiers(text).sort()).toEqual(['../b.ts', './a.ts', './c.ts', './d.ts', './e.ts']);
  });

  for (const rule of RULES) {
    it(rule.name, () => {
      expect(graph.filter(rule.broken).map((e) => `${e.from} -> ${e.to}`).sort()).toEqual(rule.known ?? []);
    });
  }

  it('each rule would catch a breaking import', () => {
    const breaking: Record<string, Edge> = {
      'protocol core imports no transport': { from: 'commands/dispatcher.ts', to: 'http/route.ts' },
      'no bridge imports another bridge (live-tail is shared)': { from: 'bridges/a2a/push-sender.ts', to: 'bridges/webhooks/signer.ts' },
      'egress imports nothing but errors, config types and the Retry-After parser': { from: 'egress/ssrf-guard.ts', to: 'bridges/webhooks/signer.ts' },
      'config imports no feature': { from: 'config/semantic-checks.ts', to: 'http/route-roots.ts' },
      'metrics import no bridge': { from: 'metrics/grpc.ts', to: 'bridges/live-tail/tail-subscriber.ts' },
      'only main.ts imports app.ts; nothing imports main.ts': { from: 'http/server.ts', to: 'app.ts' },
    };
    for (const rule of RULES) expect(rule.broken(breaking[rule.name]!), rule.name).toBe(true);
    // Allowed: a bridge using the live tail, egress using the error catalogue.
    expect(RULES.some((r) => r.broken({ from: 'bridges/sse/sse-bridge.ts', to: 'bridges/live-tail/live-tail.ts' }))).toBe(false);
    expect(RULES.some((r) => r.broken({ from: 'egress/ssrf-guard.ts', to: 'errors.ts' }))).toBe(false);
  });
});
