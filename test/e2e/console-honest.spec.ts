/// <reference lib="dom" />
import type { Locator } from '@playwright/test';
import { expect, test } from './fixtures.js';
import { WIDTHS } from './page-helpers.js';

async function overlap(a: Locator, b: Locator): Promise<boolean> {
  const [x, y] = [await a.boundingBox(), await b.boundingBox()];
  if (!x || !y) return false;
  return x.x < y.x + y.width && y.x < x.x + x.width && x.y < y.y + y.height && y.y < x.y + x.height;
}

test('buttons that need the server are disabled while it is offline, and come back with it', async ({ page, lw }) => {
  const { task } = await lw.call('delegate_task', { objective: 'honest: offline', name: 'offline approval', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 100 } } });
  await page.goto(`${lw.url}#/tasks/${task.id}`);
  const approve = page.locator('button[data-action=approve]');
  await expect(page.getByTestId('live')).toHaveText(/live/);
  await expect(approve).toBeEnabled();
  // The server goes away and nothing answers at its address (the restart drops the stream; the routes keep it unreachable).
  await page.route('**/api/**', (route) => route.abort('connectionrefused'));
  await lw.restart();
  await expect(page.getByTestId('offline-banner')).toBeVisible({ timeout: 30_000 });
  await expect(approve).toBeDisabled();
  await expect(page.locator('button[data-action=diff]')).toBeDisabled();
  // Other pages too (hash routes need no network).
  await page.evaluate(() => (location.hash = '#/doctor'));
  await expect(page.locator('button[data-action=run-doctor]')).toBeDisabled();
  await page.evaluate(() => (location.hash = '#/new'));
  await expect(page.getByRole('button', { name: 'Queue task' })).toBeDisabled();
  // Back: signed in to the server again, every button works.
  await page.unroute('**/api/**');
  await page.goto(`${lw.loginUrl}`);
  await page.evaluate((id) => (location.hash = `#/tasks/${id}`), task.id);
  await expect(page.getByTestId('live')).toHaveText(/live/, { timeout: 30_000 });
  await expect(approve).toBeEnabled();
});

test('a toast never covers the "Sign in again" banner', async ({ page, lw }) => {
  const { task } = await lw.call('delegate_task', { objective: 'honest: toast', name: 'toast approval', workspace: lw.repo, mode: 'plan_only', metadata: { mock: { sleep_ms: 100 } } });
  await page.goto(`${lw.url}#/tasks/${task.id}`);
  await expect(page.getByTestId('live')).toHaveText(/live/);
  // Leave the page unaware of the restart until an action meets it: the action's error toast and the banner then show together.
  await page.route('**/api/events*', (route) => route.abort());
  await page.route('**/api/session', () => undefined);
  await lw.restart();
  await page.locator('button[data-action=approve]').click();
  const banner = page.getByTestId('session-banner');
  const signIn = page.locator('button[data-action=sign-in-again]');
  const toast = page.locator('.notice.error').first();
  await expect(banner).toBeVisible();
  await expect(toast).toBeVisible();
  for (const width of WIDTHS) {
    for (const height of [600, 900]) {
      await page.setViewportSize({ width, height });
      expect(await overlap(toast, signIn), `the toast covers "Sign in again" at ${width}×${height}`).toBe(false);
      expect(await overlap(toast, banner), `the toast covers the banner at ${width}×${height}`).toBe(false);
    }
  }
});

test('workers that cannot run are marked in the New form with their fix, and cannot be picked', async ({ page, lw }) => {
  // A CLI that is surely missing here, beside whatever else this machine lacks.
  await lw.call('update_settings', { settings: { workers: { codex: { command: ['/nonexistent/bin/codex'] } } } });
  try {
    const { workers } = await lw.call('list_workers');
    const unusable = workers.filter((w: { usable: boolean }) => !w.usable);
    expect(unusable.map((w: { name: string }) => w.name)).toContain('codex');
    await page.goto(`${lw.url}#/new`);
    const form = page.getByRole('form', { name: 'single task' });
    const codex = form.locator('select[name=worker] option[value=codex]');
    await expect(codex).toHaveText('codex (not installed)');
    await expect(codex).toBeDisabled();
    await expect(form.locator('select[name=worker] option[value=mock]')).toBeEnabled();
    const fixes = form.getByTestId('worker-fixes');
    await fixes.locator('summary').click();
    for (const w of unusable) await expect(fixes.locator(`li[data-worker="${w.name}"]`)).toContainText(w.fix);
    await expect(fixes.locator('li[data-worker=codex]')).toContainText('codex — not installed: npm install -g @openai/codex');
  } finally {
    await lw.call('update_settings', { settings: { workers: {} } });
  }
});
