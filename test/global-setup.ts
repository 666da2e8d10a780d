import { ensureBuild } from '../scripts/build-state.js';

/**
 * The tests run the CLI as it ships: bin/lightworker.js → the built bundle. Build it once here when the
 * sources changed, then tell every spawned CLI not to check again, so an edit made while the suite runs
 * cannot trigger a rebuild under running tests (the next run picks it up).
 */
export default async function setup(): Promise<void> {
  // Clean (no earlier build's files): nothing runs the bundle yet, and the packaging test's `npm pack`
  // (whose `prepare` would otherwise rebuild clean under the running tests) finds the build current.
  await ensureBuild({ say: (s) => process.stderr.write(`test setup: ${s}\n`), keepOld: false });
  process.env.LIGHTWORKER_NO_BUILD_CHECK = '1';
}
