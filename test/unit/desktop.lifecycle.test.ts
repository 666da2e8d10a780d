import { EventEmitter } from 'node:events';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { APP_USER_MODEL_ID, createNotificationKeeper, installAppLifecycle } from '../../main/desktop/app-lifecycle.js';
import { adoptLoginShellPath, mergePath, pathFromShellOutput } from '../../main/desktop/login-path.js';
import { createQuitGuard } from '../../main/desktop/quit-guard.js';
import { isAlive, until } from '../helpers/procs.js';

/** A fake Electron `app`: an EventEmitter that records setAppUserModelId. */
function fakeApp() {
  const app = Object.assign(new EventEmitter(), { ids: [] as string[], setAppUserModelId: (id: string) => void app.ids.push(id) });
  return app;
}

/** A fake Electron Notification. */
class FakeNotification extends EventEmitter {
  shown = 0;
  show() {
    this.shown++;
  }
}

let dir: string | null = null;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = null;
});

/** A fake login shell: a script that prints `banner`, then answers the marker script like a shell. */
function fakeShell(body: string): string {
  dir = mkdtempSync(join(tmpdir(), 'lw-shell-'));
  const sh = join(dir, 'fake-shell');
  writeFileSync(sh, `#!/bin/sh\n${body}\n`);
  chmodSync(sh, 0o755);
  return sh;
}

describe('PATH from the login shell', () => {
  it('merges, never shrinks: keeps every entry and its order, appends only what is missing', () => {
    expect(mergePath('/usr/bin:/bin', '/opt/homebrew/bin:/usr/bin:/home/u/.npm-global/bin', ':')).toBe('/usr/bin:/bin:/opt/homebrew/bin:/home/u/.npm-global/bin');
    expect(mergePath('/usr/bin:/bin', null, ':')).toBe('/usr/bin:/bin');
    expect(mergePath(undefined, '/a::/b', ':')).toBe('/a:/b');
  });

  it('reads the PATH between the markers, whatever the profile prints around it', () => {
    expect(pathFromShellOutput('Welcome!\n__LIGHTWORKER_PATH_START__\n/a:/b\n__LIGHTWORKER_PATH_END__\nbye\n')).toBe('/a:/b');
    expect(pathFromShellOutput('no markers here')).toBeNull();
  });

  it('runs $SHELL -ilc for real and adds what the profile puts on PATH', async () => {
    // The fake shell runs the script it is given with /bin/sh after "loading a profile" (extending PATH).
    const shell = fakeShell('echo "motd: hello"\nPATH="$PATH:/opt/lw-test/bin"; export PATH\n[ "$1" = "-ilc" ] && exec /bin/sh -c "$2"');
    const env: NodeJS.ProcessEnv = { SHELL: shell, PATH: '/usr/bin:/bin' };
    const r = await adoptLoginShellPath({ env, platform: 'linux', fromTerminal: false });
    expect(r).toMatchObject({ outcome: 'merged', added: ['/opt/lw-test/bin'] });
    expect(env.PATH).toBe('/usr/bin:/bin:/opt/lw-test/bin');
  });

  it('gives up after the timeout on a profile that never returns, leaving PATH as it was', async () => {
    const shell = fakeShell(`sleep 30 & echo $! > "${'$'}(dirname "$0")/sleep.pid"; wait`);
    const env: NodeJS.ProcessEnv = { SHELL: shell, PATH: '/usr/bin:/bin' };
    const r = await adoptLoginShellPath({ env, platform: 'darwin', fromTerminal: false, timeoutMs: 300 });
    expect(r).toMatchObject({ outcome: 'failed', detail: expect.stringContaining('timed out') });
    expect(env.PATH).toBe('/usr/bin:/bin');
    // What the profile started is killed with it (its own process group).
    const pid = Number(readFileSync(join(dir!, 'sleep.pid'), 'utf8'));
    await until(() => !isAlive(pid), 5000, 'the profile\'s sleep to be killed');
  });

  it('is skipped on Windows, from a terminal, and with LIGHTWORKER_SHELL_PATH=0', async () => {
    const run = async () => {
      throw new Error('must not run a shell');
    };
    expect((await adoptLoginShellPath({ env: {}, platform: 'win32', fromTerminal: false, run })).outcome).toBe('skipped');
    expect((await adoptLoginShellPath({ env: {}, platform: 'darwin', fromTerminal: true, run })).outcome).toBe('skipped');
    expect((await adoptLoginShellPath({ env: { LIGHTWORKER_SHELL_PATH: '0' }, platform: 'linux', fromTerminal: false, run })).outcome).toBe('skipped');
  });
});

describe('app lifecycle', () => {
  it('sets the AppUserModelId on Windows only (the appId of electron-builder.yml)', () => {
    const win = fakeApp();
    installAppLifecycle(win, { platform: 'win32', showWindow: () => {} });
    expect(win.ids).toEqual([APP_USER_MODEL_ID]);
    const mac = fakeApp();
    installAppLifecycle(mac, { platform: 'darwin', showWindow: () => {} });
    expect(mac.ids).toEqual([]);
  });

  it('re-opens the window when the Dock icon is clicked, and stays alive with no window', () => {
    const app = fakeApp();
    let shown = 0;
    installAppLifecycle(app, { platform: 'darwin', showWindow: () => shown++ });
    app.emit('activate');
    expect(shown).toBe(1);
    expect(app.listenerCount('window-all-closed')).toBe(1); // a listener: Electron then does not quit
  });

  it('keeps each notification referenced until it is clicked, closed or failed, and bounds how many', () => {
    const keeper = createNotificationKeeper(3);
    const a = new FakeNotification();
    const b = new FakeNotification();
    keeper.show(a);
    keeper.show(b);
    expect(a.shown).toBe(1);
    expect(keeper.size).toBe(2);
    a.emit('click');
    expect(keeper.size).toBe(1);
    b.emit('close');
    expect(keeper.size).toBe(0);
    for (let i = 0; i < 5; i++) keeper.show(new FakeNotification());
    expect(keeper.size).toBe(3);
  });
});

describe('quit while tasks run, when the OS shuts down', () => {
  it('does not ask (the OS would not wait): the quit goes through', () => {
    let asked = 0;
    const guard = createQuitGuard({
      dialog: { showMessageBox: async () => (asked++, { response: 2 }) },
      running: () => [{ id: '01JTASKAAAAAAAAAAAAAAAAAAA', name: 'x', worker: 'mock' }],
      keepInTray: () => {},
      quit: () => {},
    });
    guard.allowWithoutAsking();
    const e = { prevented: false, preventDefault() { e.prevented = true; } };
    guard.beforeQuit(e);
    expect(e.prevented).toBe(false);
    expect(asked).toBe(0);
  });
});
