#!/usr/bin/env node
// `npm start`: build, then launch the desktop app when an Electron binary and a display exist;
// otherwise say why and start the headless console (`lightworker serve`) instead.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const say = (s) => process.stderr.write(`lightworker start: ${s}\n`);

/** The Electron executable, or the reason there is none. */
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

function run(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) process.exit(r.status ?? 1);
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
const electron = findElectron();
const display = findDisplay();
if (electron.path && display.ok) {
  say('building the desktop app …');
  run(process.execPath, [join(root, 'node_modules', 'electron-vite', 'bin', 'electron-vite.js'), 'build']);
  say(`launching ${electron.path}`);
  followSignals(spawn(electron.path, [root, ...passthrough], { cwd: root, stdio: 'inherit' }));
} else {
  say(electron.why ? `no Electron binary: ${electron.why}` : `no display: ${display.why}`);
  say('starting the headless console instead (lightworker serve); open the URL it prints, which carries its token …');
  run(process.execPath, [join(root, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '-c', join(root, 'renderer', 'vite.config.ts'), '--logLevel', 'warn']);
  const args = [join(root, 'bin', 'lightworker.js'), 'serve', ...(passthrough.length ? passthrough : [])];
  followSignals(spawn(process.execPath, args, { cwd: root, stdio: 'inherit' }));
}
