import { defineConfig } from 'vitest/config';

// Unit and integration tests run under plain Node against real SQLite, git and processes.
// Playwright e2e tests live in test/e2e and run through their own runner (see package.json).
export default defineConfig({
  test: {
    include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
    environment: 'node',
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: files run two at a time; real-process tests inside a file run in order.
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
  },
});
