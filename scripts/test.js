#!/usr/bin/env node
// `npm test`: the vitest suites, then the Playwright browser tests — the second runs whatever the first
// did, so a failure in one never hides the other's results. Exits non-zero when either failed, and ends
// with one line that names each runner's outcome.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => fileURLToPath(new URL(`../node_modules/.bin/${name}`, import.meta.url));
const extra = process.argv.slice(2);

function run(label, cmd, args) {
  process.stderr.write(`\nnpm test: ${label} …\n`);
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.error) process.stderr.write(`npm test: ${label} could not start: ${r.error.message}\n`);
  return r.status ?? 1;
}

const vitest = run('vitest (unit and integration)', bin('vitest'), ['run', ...extra]);
const playwright = run('playwright (browser)', bin('playwright'), ['test']);
const word = (code) => (code === 0 ? 'passed' : `FAILED (exit ${code})`);
process.stderr.write(`\nnpm test: vitest ${word(vitest)}, playwright ${word(playwright)}\n`);
process.exit(vitest !== 0 ? vitest : playwright);
