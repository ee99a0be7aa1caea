import { defineConfig } from 'vitest/config';

// Tests start real servers on loopback and real Redis (test/global-setup.ts finds one or starts
// its own); they never assert timings.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
