import { defineConfig } from 'vitest/config';

// Tests start real servers on loopback and real Redis; they never assert timings.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
  },
});
