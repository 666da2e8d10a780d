import { defineConfig } from 'vitest/config';

// The suites open no TLS connection (loopback only), and start node processes by the hundred: Node 20 parses
// NODE_EXTRA_CA_CERTS, with every bundled root certificate, at the start of each one (about 50 ms on the test
// machine, where the variable is set). The workers forked from here inherit this environment.
delete process.env.NODE_EXTRA_CA_CERTS;

/**
 * The store-level and scheduler suites, run a second time with every test home on PostgreSQL (one
 * parametrised suite, not a copy: test/helpers/env.ts `makeHome` picks the store), plus the fleet tests,
 * which need PostgreSQL.
 */
const POSTGRES_SUITE = [
  'test/unit/audit.test.ts',
  'test/unit/cachelab.packs.test.ts',
  'test/unit/cachelab.samples.test.ts',
  'test/unit/scheduler.ready-set.test.ts',
  'test/unit/store.schema-parity.test.ts',
  'test/unit/tasks.create.test.ts',
  'test/unit/tasks.host-pin.test.ts',
  'test/unit/tasks.routing.test.ts',
  'test/unit/tasks.state.test.ts',
  'test/integration/cachelab.affinity.test.ts',
  'test/integration/calls.idempotent.test.ts',
  'test/integration/cli.fleet.test.ts',
  'test/integration/cli.show.test.ts',
  'test/integration/data.gc.test.ts',
  'test/integration/data.retention.test.ts',
  'test/integration/isolation.accept.test.ts',
  'test/integration/isolation.concurrency.test.ts',
  'test/integration/isolation.e2e.test.ts',
  'test/integration/isolation.prune.test.ts',
  'test/integration/isolation.setup.test.ts',
  'test/integration/isolation.snapshot-sharing.test.ts',
  'test/integration/isolation.snapshot.test.ts',
  'test/integration/isolation.verify.test.ts',
  'test/integration/lifecycle.commands.test.ts',
  'test/integration/lifecycle.end.test.ts',
  'test/integration/lifecycle.takeover.test.ts',
  'test/integration/mcp.answer.test.ts',
  'test/integration/mcp.compact.test.ts',
  'test/integration/mcp.orchestration.test.ts',
  'test/integration/mcp.server.test.ts',
  'test/integration/requests.test.ts',
  'test/integration/scheduler.dispatch.test.ts',
  'test/integration/scheduler.kill.test.ts',
  'test/integration/scheduler.shutdown.test.ts',
  'test/integration/secrets.leak.test.ts',
  'test/integration/tasks.controls.test.ts',
  'test/integration/tasks.followup.test.ts',
  'test/integration/pr.forge.test.ts',
  'test/integration/pr.refusals.test.ts',
  'test/integration/review.comments.test.ts',
  'test/integration/tasks.resume.test.ts',
  'test/integration/teams.mcp-resume.test.ts',
  'test/integration/teams.strategies.test.ts',
  'test/integration/workers.e2e.test.ts',
  // Need PostgreSQL: not in the sqlite project.
  'test/integration/fleet.*.test.ts',
  'test/integration/store.pg-*.test.ts',
];

// Unit and integration tests run under plain Node against real SQLite (and PostgreSQL), git and processes.
// Playwright e2e tests live in test/e2e and run through their own runner (see package.json).
export default defineConfig({
  test: {
    environment: 'node',
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Two cores: files run two at a time; real-process tests inside a file run in order.
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
    projects: [
      {
        extends: true,
        test: { name: 'sqlite', include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'], exclude: ['test/integration/fleet.*.test.ts', 'test/integration/store.pg-*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'postgres',
          include: POSTGRES_SUITE,
          globalSetup: ['test/global-setup.ts', 'test/postgres-setup.ts'],
          env: { LIGHTWORKER_TEST_STORE: 'postgres' },
        },
      },
    ],
  },
});
