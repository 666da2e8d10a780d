#!/usr/bin/env node
// better-sqlite3 for Electron in a source checkout. node_modules holds the addon built for Node (the CLI,
// MCP server and tests need it); the desktop app needs one built for Electron's ABI. This keeps that second
// build apart, in .lightworker-dev/electron/, and `npm start` hands it to the app (LIGHTWORKER_SQLITE_BINDING,
// read by main/desktop/native-binding.ts). `npm run electron:sqlite` builds it.
import { spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './build-state.js';

/** The command that builds the Electron addon, as printed to users. */
export const FIX_COMMAND = 'npm run electron:sqlite';

const devDir = (root) => join(root, '.lightworker-dev', 'electron');
const versionOf = (root, pkg) => JSON.parse(readFileSync(join(root, 'node_modules', pkg, 'package.json'), 'utf8')).version;

/** LIGHTWORKER_SQLITE_BINDING, else the checkout's Electron build when it was made for this Electron version. */
export function electronBinding(root = ROOT, env = process.env) {
  if (env.LIGHTWORKER_SQLITE_BINDING) return { path: env.LIGHTWORKER_SQLITE_BINDING };
  const path = join(devDir(root), 'better_sqlite3.node');
  if (!existsSync(path)) return { why: `no Electron build of better-sqlite3 at ${path}` };
  let built = '';
  try {
    built = readFileSync(join(devDir(root), 'electron-version.txt'), 'utf8').trim();
  } catch {
    // made by hand: the load probe decides
  }
  const wanted = versionOf(root, 'electron');
  if (built && built !== wanted) return { why: `${path} was built for Electron ${built}, this checkout has ${wanted}` };
  return { path };
}

/** Load the addon inside Electron (run as Node): the one reliable ABI check. */
export function probeBinding(electronExe, binding, root = ROOT) {
  const code = `const D = require(${JSON.stringify(join(root, 'node_modules', 'better-sqlite3'))}); new D(':memory:', { nativeBinding: ${JSON.stringify(binding)} }).close();`;
  const r = spawnSync(electronExe, ['-e', code], { env: { ...process.env, ELECTRON_RUN_AS_NODE: '1' }, encoding: 'utf8', timeout: 20_000 });
  if (r.status === 0) return { ok: true };
  const line = `${r.stderr ?? ''}`.split('\n').find((l) => /NODE_MODULE_VERSION|Error/.test(l)) ?? (r.error?.message || `exit ${r.status}`);
  return { why: `Electron cannot load ${binding}: ${line.trim()}` };
}

/** Build better-sqlite3 for this checkout's Electron into .lightworker-dev/electron (a copy; node_modules is untouched). */
export function buildElectronBinding(root = ROOT) {
  const dir = devDir(root);
  const src = join(dir, 'src');
  rmSync(src, { recursive: true, force: true });
  mkdirSync(join(src, 'node_modules'), { recursive: true });
  const version = versionOf(root, 'better-sqlite3');
  writeFileSync(join(src, 'package.json'), JSON.stringify({ name: 'lightworker-electron-sqlite', private: true, dependencies: { 'better-sqlite3': version } }));
  cpSync(join(root, 'node_modules', 'better-sqlite3'), join(src, 'node_modules', 'better-sqlite3'), { recursive: true, filter: (p) => !p.includes(`${join('better-sqlite3', 'build')}`) });
  const electron = versionOf(root, 'electron');
  const cli = join(root, 'node_modules', '@electron', 'rebuild', 'lib', 'cli.js');
  const r = spawnSync(process.execPath, [cli, '--version', electron, '--module-dir', src, '--only', 'better-sqlite3', '--force'], { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`@electron/rebuild failed (exit ${r.status}); it needs a C++ toolchain or network access to Electron's headers`);
  copyFileSync(join(src, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node'), join(dir, 'better_sqlite3.node'));
  writeFileSync(join(dir, 'electron-version.txt'), `${electron}\n`);
  rmSync(src, { recursive: true, force: true });
  return join(dir, 'better_sqlite3.node');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    process.stderr.write(`built ${buildElectronBinding()}\n`);
  } catch (err) {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}
