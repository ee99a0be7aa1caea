/**
 * Builds the console (`npm run console:build`) into `console/dist/`, which is committed and served
 * by the gateway (src/console/console-routes.ts). Relative asset URLs (`base: './'`), so the page
 * works at any `console.path` and behind a path prefix; no inline script or data: URL, so it runs
 * under `script-src 'self'`; JSX compiles to Preact.
 */
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  logLevel: 'warn',
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
});
