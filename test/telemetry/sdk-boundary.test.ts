/**
 * The OpenTelemetry SDK stays at the edge (issue 27, item 6): the code writes spans against
 * `@opentelemetry/api` only; the SDK, the exporter, the context manager and the propagator are
 * imported by `telemetry/otlp-tracing.ts` alone, and that module by `main.ts` alone.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function sourceFiles(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path).split(sep).join('/')] : [];
  });
}

/** The package specifiers a file imports. */
function packagesOf(text: string): string[] {
  return [...text.matchAll(/\bfrom\s*['"]([^'"]+)['"]/g)].map((m) => m[1]!).filter((spec) => !spec.startsWith('.'));
}

describe('the OpenTelemetry SDK boundary', () => {
  const files = sourceFiles().map((file) => ({ file, text: readFileSync(join(SRC, file), 'utf8') }));

  it('imports @opentelemetry packages other than the API only in telemetry/otlp-tracing.ts', () => {
    const sdkUsers = files.filter(({ text }) => packagesOf(text).some((p) => p.startsWith('@opentelemetry/') && p !== '@opentelemetry/api')).map(({ file }) => file);
    expect(sdkUsers).toEqual(['telemetry/otlp-tracing.ts']);
    // The reader sees the API where spans are written.
    expect(files.filter(({ text }) => packagesOf(text).includes('@opentelemetry/api')).map(({ file }) => file)).toContain('telemetry/tracing.ts');
  });

  it('starts the SDK from main.ts only', () => {
    const starters = files.filter(({ text }) => /from\s*['"][./]*(telemetry\/)?otlp-tracing\.ts['"]/.test(text)).map(({ file }) => file);
    expect(starters).toEqual(['main.ts']);
  });
});
