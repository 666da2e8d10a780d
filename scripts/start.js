#!/usr/bin/env node
// `npm start`: build what is stale (nothing, usually), then launch the desktop app when an Electron
// binary, a display and an Electron build of better-sqlite3 exist; otherwise say why (and how to fix it)
// and start the headless console (`lightworker serve`) instead.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuild } from './build-state.js';
import { electronBinding, FIX_COMMAND, probeBinding } from './electron-sqlite.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const say = (s) => process.stderr.write(`lightworker start: ${s}\n`);

/** The Electron executable, or the reason there is none. */
/** How to get each missing piece, said beside what is missing. */
const ELECTRON_FIX =
  'get it with `node node_modules/electron/install.js` (downloads from github.com, or from ELECTRON_MIRROR), or point ELECTRON_OVERRIDE_DIST_PATH at an unpacked Electron';
const DISPLAY_FIX = 'run it in a desktop session, or under a virtual display: `xvfb-run -a npm start` (Debian: apt-get install xvfb)';

function findElectron() {
  const exe = process.platform === 'win32' ? 'electron.exe' : process.platform === 'darwin' ? 'Electron.app/Contents/MacOS/Electron' : 'electron';
  const override = process.env.ELECTRON_OVERRIDE_DIST_PATH;
  if (override) {
    const p = join(override, exe);
    return existsSync(p) ? { path: p } : { why: `ELECTRON_OVERRIDE_DIST_PATH=${override} has no ${exe}` };
  }
  let pkgDir;
  try {
    pkgDir = dirname(require.resolve('electron/package.json'));
  } catch {
    return { why: 'the electron package is not installed' };
  }
  const pathFile = join(pkgDir, 'path.txt');
  if (!existsSync(pathFile)) return { why: `${pathFile} is missing (the electron package's binary download did not run)` };
  const p = join(pkgDir, 'dist', readFileSync(pathFile, 'utf8').trim());
  return existsSync(p) ? { path: p } : { why: `${p} does not exist` };
}

function findDisplay() {
  if (process.platform !== 'linux') return { ok: true };
  if (process.env.DISPLAY || process.env.WAYLAND_DISPLAY) return { ok: true };
  return { why: 'neither DISPLAY nor WAYLAND_DISPLAY is set' };
}

/** The Electron build of better-sqlite3 the app can load, or why there is none (with the fix). */
function findBinding(electronPath) {
  const found = electronBinding(root);
  const probed = found.path ? probeBinding(electronPath, found.path, root) : found;
  return probed.ok ? { path: found.path } : { why: `${probed.why}; build it with \`${FIX_COMMAND}\` (or set LIGHTWORKER_SQLITE_BINDING)` };
}

/**
 * Stay until the app exits and pass signals on: a first Ctrl-C lets running tasks finish, a second
 * cancels them (the app's graceful shutdown). A terminal Ctrl-C reaches the app directly too; the app
 * counts signals that close together as one, so forwarding never turns one keypress into two.
 */
function followSignals(child) {
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 128 + (signal === 'SIGINT' ? 2 : 15) : 0)));
}

const passthrough = process.argv.slice(2);
try {
  await ensureBuild({ root, say });
} catch (err) {
  say(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
const electron = findElectron();
const display = findDisplay();
const binding = electron.path && display.ok ? findBinding(electron.path) : null;
if (electron.path && display.ok && binding?.path) {
  say(`launching ${electron.path}`);
  const env = { ...process.env, LIGHTWORKER_SQLITE_BINDING: binding.path };
  followSignals(spawn(electron.path, [root, ...passthrough], { cwd: root, stdio: 'inherit', env }));
} else {
  // Every missing piece at once, each with its fix: fixing one only to meet the next is the surprise to avoid.
  if (electron.why) say(`no Electron binary: ${electron.why}; ${ELECTRON_FIX}`);
  if (display.why) say(`no display: ${display.why}; ${DISPLAY_FIX}`);
  if (binding?.why) say(`not the desktop app: ${binding.why}`);
  say('starting the headless console instead (lightworker serve); open the URL it prints, which carries its token …');
  const args = [join(root, 'bin', 'lightworker.js'), 'serve', ...passthrough];
  followSignals(spawn(process.execPath, args, { cwd: root, stdio: 'inherit', env: { ...process.env, LIGHTWORKER_NO_BUILD_CHECK: '1' } }));
}
