#!/usr/bin/env node
// `npm run build`: the bundle (out/main, out/preload, out/renderer) and the library's declarations
// (out/types), stamped with the source hash. `--if-stale` (the `prepare` script, run by `npm install` in a
// checkout and by `npm pack`) builds only when the sources changed since the last build, or when the build
// still holds files of earlier ones (so a tarball ships exactly one build). Without the build tools
// (`npm install --omit=dev`) it says so and leaves the install alone.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { build, ensureBuild, isCheckout, ROOT } from './build-state.js';

const say = (s) => process.stderr.write(`lightworker build: ${s}\n`);
try {
  if (!isCheckout(ROOT)) say('not a source checkout: nothing to build');
  else if (process.argv.includes('--if-stale') && !existsSync(join(ROOT, 'node_modules', 'electron-vite'))) {
    say('the build tools (devDependencies) are not installed: not building; `lightworker` needs `npm install` with them');
  } else if (process.argv.includes('--if-stale')) {
    if (!(await ensureBuild({ say, keepOld: false }))) say('the build is current');
  } else {
    const t0 = Date.now();
    await build(ROOT);
    say(`built in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
} catch (err) {
  say(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
