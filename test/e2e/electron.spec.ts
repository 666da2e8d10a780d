/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { _electron as electron, expect, test } from '@playwright/test';
import { ROOT } from './console-server.js';

/** The Electron executable, or why there is none (same rules as scripts/start.js). */
function electronBinary(): { path?: string; why?: string } {
  const exe = process.platform === 'win32' ? 'electron.exe' : process.platform === 'darwin' ? 'Electron.app/Contents/MacOS/Electron' : 'electron';
  if (process.env.ELECTRON_OVERRIDE_DIST_PATH) {
    const p = join(process.env.ELECTRON_OVERRIDE_DIST_PATH, exe);
    return existsSync(p) ? { path: p } : { why: `ELECTRON_OVERRIDE_DIST_PATH has no ${exe}` };
  }
  const pkg = dirname(createRequire(import.meta.url).resolve('electron/package.json'));
  const pathFile = join(pkg, 'path.txt');
  if (!existsSync(pathFile)) return { why: `no Electron binary (${pathFile} missing: the electron package's download did not run)` };
  const p = join(pkg, 'dist', readFileSync(pathFile, 'utf8').trim());
  return existsSync(p) ? { path: p } : { why: `no Electron binary at ${p}` };
}

const bin = electronBinary();
const display = process.platform !== 'linux' || process.env.DISPLAY || process.env.WAYLAND_DISPLAY;
const skipWhy = bin.why ?? (display ? undefined : 'no display (DISPLAY/WAYLAND_DISPLAY unset; run under xvfb-run)');

test.describe('desktop app (Electron)', () => {
  test.beforeAll(() => {
    if (skipWhy) process.stderr.write(`skipping Electron tests: ${skipWhy}\n`);
  });

  test('opens the console over IPC with a locked-down renderer', async () => {
    test.skip(Boolean(skipWhy), skipWhy);
    execFileSync(process.execPath, [join(ROOT, 'node_modules', 'electron-vite', 'bin', 'electron-vite.js'), 'build'], { cwd: ROOT, stdio: 'pipe' });
    const home = mkdtempSync(join(tmpdir(), 'lw-electron-'));
    const app = await electron.launch({ executablePath: bin.path, args: [ROOT, '--no-sandbox'], env: { ...process.env, LIGHTWORKER_HOME: home } as Record<string, string> });
    try {
      const page = await app.firstWindow();
      await expect(page.locator('.brand')).toHaveText('LightWorker');
      // IPC face: the preload bridge exists, with one method per command and no generic invoke.
      const bridge = await page.evaluate(() => {
        const lw = (globalThis as { lightworker?: { commands: Record<string, unknown> } }).lightworker;
        return {
          hasBridge: typeof lw === 'object',
          listTasks: typeof lw?.commands.list_tasks,
          invoke: 'invoke' in (lw ?? {}),
          nodeRequire: typeof (globalThis as { require?: unknown }).require,
        };
      });
      expect(bridge).toEqual({ hasBridge: true, listTasks: 'function', invoke: false, nodeRequire: 'undefined' });
      await page.keyboard.press('6');
      await page.locator('button[data-action=run-doctor]').click();
      await expect(page.locator('li[data-check=database]')).toBeVisible();
      // Closing the window keeps the app running (tray).
      await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows()[0].close());
      expect(await app.evaluate(({ BrowserWindow }) => BrowserWindow.getAllWindows().length)).toBe(1);
    } finally {
      await app.evaluate(({ app: a }) => a.quit()).catch(() => undefined);
      await app.close().catch(() => undefined);
      rmSync(home, { recursive: true, force: true });
    }
  });
});
