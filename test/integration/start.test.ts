import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/env.js';

/**
 * `npm start` (scripts/start.js) with a current build: no rebuild, straight to the console; and the
 * desktop path's guard against better-sqlite3's ABI, driven by a stand-in Electron executable
 * (ELECTRON_OVERRIDE_DIST_PATH) since no real binary is installed here.
 */
const ROOT = resolve(import.meta.dirname, '../..');
const START = join(ROOT, 'scripts', 'start.js');

let t: ReturnType<typeof tempDir>;
beforeAll(() => {
  t = tempDir('lw-start-');
});
afterAll(() => t.cleanup());

interface Started {
  stdout: string;
  stderr: string;
  code: number | null;
}

/** Run start.js until `until` matches stdout (then SIGTERM) or it exits. */
function start(env: Record<string, string>, until: RegExp | null, timeoutMs = 60_000): Promise<Started> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [START, '--port', '0', '--no-open'], {
      cwd: ROOT,
      env: { ...process.env, LIGHTWORKER_HOME: join(t.dir, 'home'), DISPLAY: '', WAYLAND_DISPLAY: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const r: Started = { stdout: '', stderr: '', code: null };
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`start.js did not get there in ${timeoutMs} ms:\n${r.stdout}\n${r.stderr}`));
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => {
      r.stdout += d.toString();
      if (until?.test(r.stdout)) child.kill('SIGTERM');
    });
    child.stderr.on('data', (d: Buffer) => (r.stderr += d.toString()));
    child.on('exit', (code) => {
      clearTimeout(timer);
      r.code = code;
      done(r);
    });
  });
}

/** A stand-in Electron: logs each call; `-e` (the addon probe) fails like an ABI mismatch unless `probeOk`. */
function fakeElectron(name: string, probeOk: boolean): { dir: string; log: string } {
  const dir = join(t.dir, name);
  const log = join(dir, 'calls.log');
  mkdirSync(dir, { recursive: true });
  const script = `#!/bin/sh
echo "RUN_AS_NODE=$ELECTRON_RUN_AS_NODE BINDING=$LIGHTWORKER_SQLITE_BINDING ARGS=$*" >> ${JSON.stringify(log)}
if [ "$1" = "-e" ]; then
  ${probeOk ? 'exit 0' : `echo "Error: The module was compiled against a different Node.js version using NODE_MODULE_VERSION 115. This version of Node.js requires NODE_MODULE_VERSION 139." >&2; exit 1`}
fi
exit 0
`;
  writeFileSync(join(dir, 'electron'), script);
  chmodSync(join(dir, 'electron'), 0o755);
  return { dir, log };
}

describe('npm start', () => {
  it('with a current build goes straight to the console, rebuilding nothing', async () => {
    const outputs = ['out/renderer/index.html', 'out/main/cli.js', 'out/build-stamp.json'].map((f) => join(ROOT, f));
    const before = outputs.map((f) => statSync(f).mtimeMs);
    const r = await start({}, /LightWorker console: http:\/\/127\.0\.0\.1:\d+/);
    expect(outputs.map((f) => statSync(f).mtimeMs)).toEqual(before);
    expect(r.stdout).toMatch(/LightWorker console: http:\/\/127\.0\.0\.1:\d+/);
    expect(r.stderr).not.toMatch(/building/);
    expect(r.stderr).toMatch(/no (Electron binary|display)/);
  });

  it('without an Electron binary and without a display, names both, each with how to get it', async () => {
    const r = await start({ ELECTRON_OVERRIDE_DIST_PATH: join(t.dir, 'no-electron-here') }, /LightWorker console: http/);
    expect(r.stderr).toMatch(/no Electron binary: ELECTRON_OVERRIDE_DIST_PATH=.*no-electron-here has no electron; get it with `node node_modules\/electron\/install\.js`/);
    expect(r.stderr).toMatch(/no display: neither DISPLAY nor WAYLAND_DISPLAY is set; run it in a desktop session, or under a virtual display: `xvfb-run -a npm start`/);
    expect(r.stderr).toContain('starting the headless console instead');
    expect(r.stdout).toMatch(/LightWorker console: http/);
  });

  it.skipIf(process.platform === 'win32')('with Electron whose better-sqlite3 build does not load: the console, and the command that fixes it', async () => {
    const fake = fakeElectron('electron-abi', false);
    const binding = join(t.dir, 'node-abi.node');
    writeFileSync(binding, 'not really an addon');
    const r = await start({ ELECTRON_OVERRIDE_DIST_PATH: fake.dir, DISPLAY: ':99', LIGHTWORKER_SQLITE_BINDING: binding }, /LightWorker console: http/);
    expect(r.stderr).toContain('NODE_MODULE_VERSION');
    expect(r.stderr).toContain('npm run electron:sqlite');
    expect(r.stdout).toMatch(/LightWorker console: http/);
    const calls = readFileSync(fake.log, 'utf8').trim().split('\n');
    expect(calls).toHaveLength(1); // probed, never launched as the app
    expect(calls[0]).toMatch(/^RUN_AS_NODE=1 .*ARGS=-e /);
  });

  it.skipIf(process.platform === 'win32')('with Electron and a loadable build: launches the app with LIGHTWORKER_SQLITE_BINDING', async () => {
    const fake = fakeElectron('electron-ok', true);
    const binding = join(t.dir, 'electron-abi.node');
    writeFileSync(binding, 'stand-in');
    const r = await start({ ELECTRON_OVERRIDE_DIST_PATH: fake.dir, DISPLAY: ':99', LIGHTWORKER_SQLITE_BINDING: binding }, null);
    expect(r.code).toBe(0);
    const calls = readFileSync(fake.log, 'utf8').trim().split('\n');
    expect(calls).toHaveLength(2);
    expect(calls[1]).toBe(`RUN_AS_NODE= BINDING=${binding} ARGS=${ROOT} --port 0 --no-open`);
  });
});
