/**
 * The committed console build (`console/dist/`, what the gateway serves) is what its sources build
 * to today, and it fits the size budget. After changing anything under `console/`, run
 * `npm run console:build` and commit `console/dist/` with it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'vite';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../support/gateway.ts';

const CONSOLE = fileURLToPath(new URL('../../console/', import.meta.url));
const DIST = join(CONSOLE, 'dist');
/** The whole console, gzipped, stays under this many bytes (issue 17). */
const BUDGET_BYTES = 200 * 1024;

/** Every file under `dir` by its relative path. */
function filesOf(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (entry.isFile()) files.set(relative(dir, join(entry.parentPath, entry.name)), readFileSync(join(entry.parentPath, entry.name)));
  }
  return files;
}

describe('the committed console build', () => {
  it('is what the sources build to now (run npm run console:build when this fails)', async () => {
    const out = tempDir();
    // Vite reads NODE_ENV (vitest sets it to "test"); the committed build is a production one.
    const nodeEnv = process.env.NODE_ENV;
    process.env.NODE_ENV = 'production';
    try {
      await build({ configFile: join(CONSOLE, 'vite.config.ts'), mode: 'production', logLevel: 'silent', build: { outDir: out, emptyOutDir: true } });
    } finally {
      process.env.NODE_ENV = nodeEnv;
    }
    const fresh = filesOf(out);
    const committed = filesOf(DIST);
    expect([...committed.keys()].sort()).toEqual([...fresh.keys()].sort());
    for (const [path, content] of fresh) expect(committed.get(path)?.equals(content), `console/dist/${path} is stale`).toBe(true);
  });

  it('fits the budget: under 200 KB gzipped', () => {
    const gzipped = [...filesOf(DIST).values()].reduce((sum, content) => sum + gzipSync(content).length, 0);
    expect(gzipped).toBeLessThan(BUDGET_BYTES);
  });
});
